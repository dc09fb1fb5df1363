-- client.lua - the Kubernetes API client of runtime/kube/ from Lua: open
-- one (the agent's command), or reach the agent's own from any script
-- state (client.agent()); read its change log as decoded records, single
-- objects by API path, and its status. Each feed keeps its own cursor in
-- the change log and one reused buffer, grown when a record needs more.
local json = require("moonrover.lib.json_decode")
local rt = require("moonrover.rt")

local _M = {}
local Feed = {}
Feed.__index = Feed

local ENOENT, EIO, ENOBUFS = 2, 5, 105
local BUF_START = 64 * 1024
local BUF_MAX = 256 * 1024 * 1024

local OPTS = { "server", "ca_pem", "token", "token_file", "cert_pem", "key_pem", "node_name", "namespaces" }
local COUNTERS = { "lists", "watches", "relists_gone", "watch_drops", "errors", "events", "objects_pods",
  "objects_services" }

local function feed_of(k)
  local ffi = rt.ffi
  local self = setmetatable({ k = k, cursor = ffi.new("uint64_t[1]") }, Feed)
  self.cap = BUF_START
  self.buf = ffi.new("char[?]", self.cap)
  return self
end

-- opts: server, ca_pem, token, token_file, cert_pem, key_pem, node_name,
-- namespaces ("a,b" or nil: all). The client, not started; or nil and why.
function _M.open(opts)
  local ffi, lib = rt.ffi, rt.lib
  local o = ffi.new("struct mr_kube_opts")
  for _, name in ipairs(OPTS) do
    if opts[name] ~= nil then
      o[name] = opts[name]
    end
  end
  local k, err = rt.call(lib.mr_kube_open, o)
  if not k then
    return nil, err
  end
  return feed_of(ffi.gc(k, lib.mr_kube_close))
end

local agent_feed

-- The agent's client, the same feed each time in this Lua state; nil
-- where the agent runs without Kubernetes (or outside an agent).
function _M.agent()
  if agent_feed then
    return agent_feed
  end
  local k = rt.lib.mr_agent_kube()
  if k == nil then
    return nil
  end
  agent_feed = feed_of(k)
  return agent_feed
end

-- Closes a client this state opened (not the agent's).
function Feed:close()
  if self.k ~= nil and self ~= agent_feed then
    rt.lib.mr_kube_close(rt.ffi.gc(self.k, nil))
  end
  self.k = nil
end

-- true when the node exists; false and the runtime's why ('node "x" not
-- found', or the request's failure). For a client this state opened.
function Feed:check_node(timeout_ms)
  local r, err = rt.call(rt.lib.mr_kube_check_node, self.k, timeout_ms)
  if not r then
    return false, err
  end
  return true
end

-- Starts the list+watch thread; true, or nil and why.
function Feed:start()
  local r, err = rt.call(rt.lib.mr_kube_start, self.k)
  if not r then
    return nil, err
  end
  return true
end

-- Doubles the buffer; false when it is at its largest.
function Feed:grow()
  if self.cap >= BUF_MAX then
    return false
  end
  self.cap = self.cap * 2
  self.buf = rt.ffi.new("char[?]", self.cap)
  return true
end

-- The next answer of the change log as a list of lines ({} when nothing is new).
function Feed:next_lines()
  local ffi, lib = rt.ffi, rt.lib
  local n = lib.mr_kube_changes(self.k, self.cursor, self.buf, self.cap)
  while n < 0 do
    if ffi.errno() ~= ENOBUFS or not self:grow() then
      error("kube: cannot read the change log: a record larger than " .. self.cap .. " bytes", 2)
    end
    n = lib.mr_kube_changes(self.k, self.cursor, self.buf, self.cap)
  end
  local lines = {}
  for line in ffi.string(self.buf, tonumber(n)):gmatch("[^\n]+") do
    lines[#lines + 1] = line
  end
  return lines
end

-- Iterator over the changes since this feed's last call: decoded records
-- { kind = "pod"|"service", type = "ADDED"|"MODIFIED"|"DELETED"|"SYNCED"|"RESET", object = {...} }.
function Feed:changes()
  local lines, i = self:next_lines(), 0
  return function()
    i = i + 1
    if i > #lines then
      if #lines == 0 then
        return nil
      end
      lines, i = self:next_lines(), 1
      if #lines == 0 then
        return nil
      end
    end
    local rec, why = json.decode(lines[i])
    if not rec then
      error("kube: a change record that is not JSON (" .. why .. ")", 2)
    end
    return rec
  end
end

-- The object at API path: the decoded table; or nil and "pending" (a GET
-- is queued: ask again), "not found", or why it failed.
function Feed:get(path)
  local ffi, lib = rt.ffi, rt.lib
  local n = lib.mr_kube_get(self.k, path, self.buf, self.cap)
  while n < 0 and ffi.errno() == ENOBUFS and self:grow() do
    n = lib.mr_kube_get(self.k, path, self.buf, self.cap)
  end
  if n == 0 then
    return nil, "pending"
  elseif n < 0 then
    local e = ffi.errno()
    if e == ENOENT then
      return nil, "not found"
    elseif e == EIO then
      return nil, "the API server did not give " .. path .. " (the client's status says why)"
    end
    return nil, "cannot get " .. path .. ": " .. (e == ENOBUFS and "too large" or "not an API path")
  end
  return json.decode(ffi.string(self.buf, tonumber(n)))
end

-- The client's status: connected, pods_synced, services_synced (booleans),
-- the counters as numbers, last_error ("" when none).
function Feed:status()
  local ffi = rt.ffi
  local s = ffi.new("struct mr_kube_status")
  rt.lib.mr_kube_status(self.k, s)
  local out = { connected = s.connected ~= 0, pods_synced = s.pods_synced ~= 0,
    services_synced = s.services_synced ~= 0, last_error = ffi.string(s.last_error) }
  for _, name in ipairs(COUNTERS) do
    out[name] = tonumber(s[name])
  end
  return out
end

return _M
