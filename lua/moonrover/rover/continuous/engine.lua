-- engine.lua - the evaluation of continuous-profiling policies: one sliding
-- window per process and policy item (and per URI for HTTP items), each of
-- its item's own period; values added every second; at each check the items
-- whose window holds at least Count of the last Period seconds at or above
-- their threshold become causes, grouped per dimension (the process for
-- ON_CPU and OFF_CPU, the service instance for NETWORK), and a dimension not
-- silenced fires one trigger. Time, samples and the silence are the caller's,
-- so every rule is testable without a clock or a process.
--
--   local e = engine.new({ windows = require("moonrover.windows"), silence = silence.new(1200) })
--   e:set_policies("shop", policies)           -- from policy.lua (nil or {}: none)
--   e:set_processes(list)                      -- { key, pid, id, service, instance, name, layer, labels }
--   e:sample(now, samples, system, http)       -- every second
--   local meters, triggers = e:check(now)      -- every check interval
--   e:clear(trigger.dimension [, retry])       -- its task never started: the dimension may fire again
--
-- Unlike Rover, an item is judged on its own period only (never on a window
-- sized for another item), a shorter period keeps the newest seconds, a
-- restarted process (a new key: pid and start time) starts with empty
-- windows, and a dimension whose task never started is not blocked.
local _M = {}
local mt = { __index = _M }

-- HTTP seconds are read this long after they end: the tracer hands
-- exchanges on in batches, so the last seconds are still filling.
_M.HTTP_LAG = 2

-- deps: windows (the moonrover.windows module), silence (a silence),
-- silence_seconds (how long a dimension stays silent after a trigger).
function _M.new(deps)
  return setmetatable({
    windows = deps.windows,
    silence = deps.silence,
    silence_seconds = deps.silence_seconds, -- nil: the silence's own
    imported = nil, -- watch key -> exported window, until the processes are known
    policies = {},  -- service -> list of { target, items, source }
    processes = {}, -- list of processes
    watches = {},   -- key -> watch
    order = {},     -- watch keys, sorted
  }, mt)
end

local function uri_targets(item)
  if item.uri_list then
    local out = {}
    for i, path in ipairs(item.uri_list) do
      out[i] = { label = path, path = path }
    end
    return out
  end
  if item.uri_regex then
    return { { label = item.uri_regex, regex = item.uri_regex, matcher = item.matcher } }
  end
  return { { label = "global" } }
end

local function watch_key(proc, policy, item, uri)
  return table.concat({ proc.key, policy.source or "", policy.target, item.type, uri and uri.label or "" }, "\1")
end

local function place(self, old, fresh, proc, policy, item, uri)
  local key = watch_key(proc, policy, item, uri)
  local w = old[key]
  local saved = not w and self.imported and self.imported[key]
  if saved then
    w = { proc = proc, target = policy.target, item = { period = saved.window.n }, window =
      self.windows.import(saved.window), lag = saved.lag, http_done = saved.http_done, matches = {} }
  end
  if w then
    if w.item.period ~= item.period then
      w.window:resize(item.period)
    end
    w.item, w.uri, w.proc = item, uri, proc
  else
    w = { proc = proc, target = policy.target, item = item, uri = uri, window = self.windows.new(item.period),
      lag = item.checker.scope == "http" and _M.HTTP_LAG or 0, matches = {} }
  end
  fresh[key] = w
end

-- Builds the watches of the current processes and policies, keeping the
-- windows (and their data) of those that were already watched.
local function rebuild(self)
  local old, fresh = self.watches, {}
  for _, proc in ipairs(self.processes) do
    for _, policy in ipairs(self.policies[proc.service] or {}) do
      for _, item in ipairs(policy.items) do
        local uris = item.checker.scope == "http" and uri_targets(item) or { false }
        for _, uri in ipairs(uris) do
          place(self, old, fresh, proc, policy, item, uri or nil)
        end
      end
    end
  end
  if #self.processes > 0 then
    self.imported = nil
  end
  local order = {}
  for key in pairs(fresh) do
    order[#order + 1] = key
  end
  table.sort(order)
  self.watches, self.order = fresh, order
end

-- The policies of one service (a list of { target, items [, source] }).
function _M:set_policies(service, policies)
  self.policies[service] = policies and #policies > 0 and policies or nil
  rebuild(self)
end

-- Whether service has policies.
function _M:has_policies(service)
  return self.policies[service] ~= nil
end

-- Whether no service has policies.
function _M:idle()
  return next(self.policies) == nil
end


-- The processes to watch: those of a scan that OAP gave an id.
function _M:set_processes(list)
  self.processes = list
  rebuild(self)
end

-- One second of an HTTP watch: the series' slot of its path, the sum of
-- the slots of the paths its regex matches, or the process's totals.
local function http_slot(w, http, second)
  local pid, uri = w.proc.pid, w.uri
  if uri.path then
    return http:slot(pid, second, uri.path)
  end
  if not uri.regex then
    return http:slot(pid, second)
  end
  local sum = { count = 0, errors = 0, latency_ms = 0 }
  for _, path in ipairs(http:paths(pid)) do
    if w.matches[path] == nil then
      w.matches[path] = uri.matcher:match(path) ~= nil
    end
    local s = w.matches[path] and http:slot(pid, second, path)
    if s then
      sum.count, sum.errors, sum.latency_ms = sum.count + s.count, sum.errors + s.errors, sum.latency_ms + s.latency_ms
    end
  end
  return sum.count > 0 and sum or nil
end

local function add(w, t, value)
  if value then
    w.window:add(t, value)
    w.last = value
  end
end

local function sample_http(w, http, now)
  local last = math.floor(now) - w.lag
  local from = math.max((w.http_done or last - w.item.period) + 1, last - w.item.period + 1)
  for second = from, last do
    local slot = http and http_slot(w, http, second)
    add(w, second, slot and w.item.checker.value(slot))
  end
  w.http_done = last
end

-- Adds this second's values: samples is pid -> the sampler's facts (a
-- process missing from it has none this second), system the host's load,
-- http a moonrover.net.http_series (or nil).
function _M:sample(now, samples, system, http)
  for _, key in ipairs(self.order) do
    local w = self.watches[key]
    local checker = w.item.checker
    if checker.scope == "http" then
      sample_http(w, http, now)
    elseif checker.scope == "system" then
      add(w, now, checker.value(nil, system))
    else
      local s = samples[w.proc.pid]
      add(w, now, s and checker.value(s, system))
    end
  end
end

local function dimension(target, proc)
  if target == "NETWORK" then
    return "NETWORK|" .. proc.service .. "_" .. proc.instance
  end
  return target .. "|" .. proc.id
end

-- A cause when at least Count of the item's last Period seconds are at or
-- above its threshold (Rover compares with >=); current is the newest such value.
local function cause_of(w, now)
  local item = w.item
  local matched, current = 0, nil
  w.window:each(item.period, now - w.lag, function(v)
    if v >= item.threshold then
      matched, current = matched + 1, v
    end
  end)
  if matched < item.count then
    return nil
  end
  local c = { checker = item.checker, threshold = item.threshold, proc = w.proc, current = current }
  if w.uri and w.uri.path then
    c.path = w.uri.path
  elseif w.uri then
    c.regex = w.uri.regex or "" -- "": no URI filter (Rover's global cause)
  end
  return c
end

local MAIN_LABELS = { "mesh-application", "k8s-service" }

local function has_label(proc, wanted)
  for _, l in ipairs(proc.labels or {}) do
    if l == wanted then
      return true
    end
  end
  return false
end

-- The process a NETWORK trigger is reported for, as Rover picks it.
local function main_process(procs)
  for _, wanted in ipairs(MAIN_LABELS) do
    for _, p in ipairs(procs) do
      if has_label(p, wanted) then
        return p
      end
    end
  end
  return procs[1]
end

local function trigger_of(target, dim, causes)
  local procs, seen = {}, {}
  for _, c in ipairs(causes) do
    if not seen[c.proc] then
      seen[c.proc] = true
      procs[#procs + 1] = c.proc
    end
  end
  local main = main_process(procs)
  local mine = {}
  for _, c in ipairs(causes) do
    mine[#mine + 1] = (target ~= "NETWORK" or c.proc == main) and c or nil
  end
  return { target = target, dimension = dim, service = main.service, instance = main.instance, main = main,
    processes = procs, causes = mine, all_causes = causes }
end

local function meter_of(w)
  local proc = w.proc
  local labels = { process_name = proc.name, layer = proc.layer }
  if w.uri then
    labels.uri = w.uri.label
  end
  return { service = proc.service, instance = proc.instance, name = w.item.checker.meter, labels = labels,
    value = w.last }
end

-- The meters of the values taken since the last check (one per process,
-- check type and URI) and the triggers that fire now, in a stable order.
function _M:check(now)
  local meters, seen = {}, {}
  local causes, dims = {}, {}
  for _, key in ipairs(self.order) do
    local w = self.watches[key]
    local mkey = table.concat({ w.proc.key, w.item.checker.meter, w.uri and w.uri.label or "" }, "\1")
    if w.last and not seen[mkey] then
      seen[mkey] = true
      meters[#meters + 1] = meter_of(w)
    end
    w.last = nil
    local c = cause_of(w, now)
    if c then
      local dim = dimension(w.target, w.proc)
      if not causes[dim] then
        causes[dim] = { target = w.target }
        dims[#dims + 1] = dim
      end
      table.insert(causes[dim], c)
    end
  end
  local triggers = {}
  for _, dim in ipairs(dims) do
    if self.silence:try(dim, self.silence_seconds) then
      triggers[#triggers + 1] = trigger_of(causes[dim].target, dim, causes[dim])
    end
  end
  return meters, triggers
end

-- The windows as plain data, for a hot reload (see import).
function _M:export()
  local out = {}
  for key, w in pairs(self.watches) do
    out[key] = { window = w.window:export(), lag = w.lag, http_done = w.http_done }
  end
  return out
end

-- Takes export()'s data of the previous version: each window comes back
-- when its process and item are watched again.
function _M:import(data)
  self.imported = data
end

-- Lifts a dimension's silence (its task never started); with retry, the
-- dimension may fire again after that many seconds rather than at once.
function _M:clear(dim, retry)
  self.silence:clear(dim)
  if retry then
    self.silence:try(dim, retry)
  end
end

return _M
