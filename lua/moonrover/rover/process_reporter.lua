-- process_reporter.lua - the process storage and reporting loop of the Rover
-- drop-in (as Rover's finders/storage.go: report new processes, keep the
-- reported ones alive at each heartbeat, re-report all of them every Nth) as
-- a state machine with no clock and no I/O: the caller feeds it scans, asks it
-- for the calls to make at each heartbeat, and hands it OAP's answers.
--
--   local r = reporter.new({ agent_id = uuid, heartbeat_every = 10 })
--   local removed = r:update(finder:scan())   -- gone processes, to tell the tasks
--   for _, call in ipairs(r:next_calls()) do  -- once per heartbeat
--     send(call.rpc, call.message)            -- "reportProcesses" / "keepAlive"
--   end
--   local call = r:new_call()                 -- between heartbeats: new processes, or nil
--   r:on_report_response(downstream)          -- EBPFReportProcessDownstream
--   r:on_report_failed(call)                  -- reportProcesses failed
--   r:process_by_id(oap_process_id)           -- a scanned process or nil
--   local known, reported = r:counts()
--
-- A process is not reported until OAP returns its id: then it is kept alive.
-- Unlike Rover, one that OAP leaves out of its answer is reported again at the
-- next heartbeat instead of being ignored forever, and processes that are
-- already reported get their keepAlive at every heartbeat even when new ones
-- are reported in the same heartbeat (one call per heartbeat would starve
-- them on a busy host, and OAP forgets processes not seen for 5 minutes).
-- Every heartbeat_every-th heartbeat (Rover's properties_report_period) all
-- processes are reported with their properties instead, because keepAlive
-- replaces the stored properties with support_ebpf_profiling alone; when that
-- full report fails, the next heartbeat repeats it. new_call() reports the
-- processes found since the last call at once, without waiting for the
-- heartbeat, so that tasks and policies reach a new process within seconds
-- (Rover waits for the heartbeat); each is in one such call at most, and the
-- next heartbeat leaves it to that call's answer (it reports it at the one
-- after when the answer gave it no id, and at the next when the call failed).
--
-- Processes are those of process_finder.lua and kube_finder.lua; one is the
-- same process across scans while its pid, start time and entity stay the same.
local finder = require("moonrover.rover.process_finder")

local _M = {}
local mt = { __index = _M }

-- The order properties are sent in (Rover's, then ours), by kind of process:
-- a host process (process_finder.lua) or a pod's (kube_finder.lua, kind
-- "kubernetes", sent as EBPFKubernetesProcessMetadata).
local PROPERTY_KEYS = {
  host = { "host_ip", "pid", "command_line", "support_ebpf_profiling", "container_id" },
  kubernetes = { "host_ip", "container_ip", "container_name", "pod_name", "pid", "command_line",
    "support_ebpf_profiling" },
}

function _M.new(opts)
  local every = opts.heartbeat_every or 10
  if type(every) ~= "number" or every < 1 or every % 1 ~= 0 then
    return nil, "heartbeat_every: not a positive integer"
  end
  if type(opts.agent_id) ~= "string" or opts.agent_id == "" then
    return nil, "agent_id: missing"
  end
  return setmetatable({
    agent_id = opts.agent_id,
    every = every,
    until_full = every, -- heartbeats left until the next full report
    last_full = false,  -- whether the last reportProcesses was a full report
    entries = {},       -- identity -> { process, key = pid+entity, id = OAP id or nil }
    by_key = {},        -- pid+entity -> entry
    by_id = {},         -- OAP id -> entry
  }, mt), nil
end

local function match_key(pid, entity)
  return string.format("%d\2%s", pid, finder.entity_key(entity))
end

local function identity(p)
  return string.format("%.0f\2%s", p.start_ns or 0, match_key(p.pid, p.entity))
end

-- A restarted process has the entity (so the OAP id) of the one it replaces:
-- the indexes are cleared only where they still point at this entry.
local function forget(self, ident, entry)
  self.entries[ident] = nil
  if self.by_key[entry.key] == entry then
    self.by_key[entry.key] = nil
  end
  if entry.id and self.by_id[entry.id] == entry then
    self.by_id[entry.id] = nil
  end
end

local function by_pid(a, b)
  return a.pid < b.pid
end

-- Takes a scan's processes; returns the processes that are gone, by pid.
function _M:update(processes)
  local live = {}
  for _, p in ipairs(processes) do
    live[identity(p)] = p
  end
  local removed = {}
  for ident, entry in pairs(self.entries) do
    if not live[ident] then
      forget(self, ident, entry)
      removed[#removed + 1] = entry.process
    end
  end
  for ident, p in pairs(live) do
    local entry = self.entries[ident]
    if entry then
      entry.process = p
    else
      entry = { process = p, key = match_key(p.pid, p.entity) }
      self.entries[ident] = entry
      self.by_key[entry.key] = entry
    end
  end
  table.sort(removed, by_pid)
  return removed
end

local function properties(p)
  local list = {}
  for _, key in ipairs(PROPERTY_KEYS[p.kind == "kubernetes" and "kubernetes" or "host"]) do
    if p.properties[key] ~= nil then
      list[#list + 1] = { key = key, value = p.properties[key] }
    end
  end
  return list
end

local function report_item(p)
  local metadata = { entity = p.entity, pid = p.pid, properties = properties(p) }
  if p.kind == "kubernetes" then
    return { k8sProcess = metadata }
  end
  return { hostProcess = metadata }
end

local function ping_item(p)
  return {
    entityMetadata = p.entity,
    properties = { { key = "support_ebpf_profiling", value = p.properties.support_ebpf_profiling } },
  }
end

-- The entries to report and to keep alive this heartbeat, each by pid.
local function partition(self, full)
  local report, alive = {}, {}
  for _, entry in pairs(self.entries) do
    local list = (full or not entry.id) and report or alive
    if full or entry.id or not entry.fresh then
      list[#list + 1] = entry.process
    end
    entry.fresh = nil
  end
  table.sort(report, by_pid)
  table.sort(alive, by_pid)
  return report, alive
end

local function message(items, build, agent_id)
  local out = {}
  for i, p in ipairs(items) do
    out[i] = build(p)
  end
  return { processes = out, ebpfAgentID = agent_id }
end

-- The calls to make this heartbeat: a list of { rpc = name, message = table }
-- with at most one "reportProcesses" (EBPFProcessReportList) and one
-- "keepAlive" (EBPFProcessPingPkgList); empty when there is nothing to send.
function _M:next_calls()
  self.until_full = self.until_full - 1
  local full = self.until_full <= 0
  if full then
    self.until_full = self.every
  end
  local report, alive = partition(self, full)
  local calls = {}
  for _, entry in pairs(self.entries) do
    entry.sent = true
  end
  if #report > 0 then
    self.last_full = full
    calls[#calls + 1] = { rpc = "reportProcesses", full = full,
      message = message(report, report_item, self.agent_id) }
  end
  if #alive > 0 then
    calls[#calls + 1] = { rpc = "keepAlive", message = message(alive, ping_item, self.agent_id) }
  end
  return calls
end

-- A reportProcesses call for the processes that were never sent, or nil.
function _M:new_call()
  local report, entries = {}, {}
  for _, entry in pairs(self.entries) do
    if not entry.sent and not entry.id then
      entry.sent, entry.fresh = true, true
      report[#report + 1], entries[#entries + 1] = entry.process, entry
    end
  end
  if #report == 0 then
    return nil
  end
  table.sort(report, by_pid)
  return { rpc = "reportProcesses", full = false, entries = entries,
    message = message(report, report_item, self.agent_id) }
end

local function echoed(item)
  local echo = item.hostProcess or item.k8sProcess
  if type(echo) == "table" and echo.pid and type(echo.entityMetadata) == "table" then
    return match_key(echo.pid, echo.entityMetadata)
  end
  return nil
end

-- Takes OAP's answer to reportProcesses (EBPFReportProcessDownstream): each
-- process it echoes by pid and entity gets its OAP id. Returns the processes
-- that got an id they did not have.
function _M:on_report_response(downstream)
  local identified = {}
  for _, item in ipairs(downstream and downstream.processes or {}) do
    local key = echoed(item)
    local entry = key and self.by_key[key]
    if entry and item.processId and item.processId ~= "" and entry.id ~= item.processId then
      if entry.id and self.by_id[entry.id] == entry then
        self.by_id[entry.id] = nil
      end
      entry.id = item.processId
      self.by_id[entry.id] = entry
      identified[#identified + 1] = entry.process
    end
  end
  return identified
end

-- reportProcesses failed: processes without an id stay so (and are reported at
-- the next heartbeat, as always); a failed full report is repeated then too.
-- call: the call that failed (without it, the last heartbeat's report).
function _M:on_report_failed(call)
  local full = self.last_full
  if call then
    full = call.full
    for _, entry in ipairs(call.entries or {}) do
      entry.fresh = nil
    end
  end
  if full then
    self.until_full = 1
  end
end

-- How many processes the last scan gave, and how many of them OAP has an id
-- for (reported and kept alive).
function _M:counts()
  local known, reported = 0, 0
  for _, entry in pairs(self.entries) do
    known = known + 1
    reported = reported + (entry.id and 1 or 0)
  end
  return known, reported
end

-- The processes OAP gave an id: a list of { process, id }, by pid.
function _M:reported()
  local out = {}
  for _, entry in pairs(self.entries) do
    if entry.id then
      out[#out + 1] = { process = entry.process, id = entry.id }
    end
  end
  table.sort(out, function(a, b) return a.process.pid < b.process.pid end)
  return out
end

-- The process OAP knows as oap_id, or nil.
function _M:process_by_id(oap_id)
  local entry = self.by_id[oap_id]
  return entry and entry.process
end

return _M
