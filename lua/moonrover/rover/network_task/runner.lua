-- runner.lua - runs a NETWORK profiling task of the Rover drop-in on the
-- agent's network tracer: it hears the "connection" and "http" streams
-- (through opts.streams, which fans the script's one subscription out to
-- the running tasks), keeps what concerns the task's processes, and gives
-- the sender (opts.sender) at each report the rover_net_p_* meters counted
-- since the last one and the traces sampled by the task's rules. Its
-- interface is task_manager's (start, stop, collect, close): collect() has
-- nothing, since a NETWORK task sends no EBPFProfilingData.
local connections = require("moonrover.rover.network_task.connections")
local meters = require("moonrover.rover.network_task.meters")
local sampling = require("moonrover.rover.network_task.sampling")
local traces = require("moonrover.rover.network_task.traces")
local traffic = require("moonrover.rover.network_task.traffic")

local _M = {}
local mt = { __index = _M }

-- task: from task_command.parse (target NETWORK); members: the task's
-- processes, { pid, id (OAP process id), entity = { layer, serviceName,
-- instanceName, processName } }; opts:
--   prefix       meter name prefix (profiling.task.network.meter_prefix)
--   streams      :add(runner) -> true or nil, err; :remove(runner)
--   sender       :add(runner); :remove(runner) (takes its last report)
--   regex(p)     -> matcher or nil, err (the sampling rules' URIRegex)
--   log(level, fmt, ...)
--   on_report(stats)  optional: told at each report what stats() returns
function _M.new(task, members, opts)
  if task.target ~= "NETWORK" then
    return nil, "target " .. tostring(task.target) .. " is not NETWORK"
  end
  local by_pid = {}
  for _, m in ipairs(members) do
    by_pid[m.pid] = m
  end
  local sampler, problems = sampling.new(task.extension_json, { regex = opts.regex })
  if not sampler then
    return nil, problems
  end
  for _, p in ipairs(problems) do
    opts.log("warn", "task %s: sampling %s", task.id, p)
  end
  local peers = traffic.peers()
  return setmetatable({
    task = task, opts = opts, members = by_pid, conns = connections.new(by_pid, peers), peers = peers,
    meters = meters.new(opts.prefix), sampler = sampler, exchanges = 0, sampled = 0, forgotten_logged = 0,
  }, mt)
end

-- Starts listening to the agent's network streams and reporting through the
-- sender; true, or nil and why.
function _M:start()
  local ok, err = self.opts.streams:add(self)
  if not ok then
    return nil, err
  end
  self.opts.sender:add(self)
  self.listening = true
  return true
end

-- Stops listening; what was counted stays for the last report.
function _M:stop()
  if self.listening then
    self.opts.streams:remove(self)
    self.listening = false
  end
end

-- No EBPFProfilingData: the task's data goes out through report().
function _M.collect()
  return {}
end

-- Frees the task: the sender takes its last report first.
function _M:close()
  self:stop()
  if not self.closed then
    self.closed = true
    self.opts.sender:remove(self)
  end
end

-- A batch of the "connection" stream: a list of events.
function _M:on_connection(events)
  for i = 1, #events do
    self.conns:on_event(events[i])
  end
end

local function complete(ex)
  return ex.method and ex.status > 0 and ex.duration_ns and ex.request_bytes and ex.response_bytes
end

-- A batch of the "http" stream: a list of exchanges.
function _M:on_http(exchanges)
  for i = 1, #exchanges do
    local ex = exchanges[i]
    local member = self.members[ex.pid]
    if member and self.conns:on_exchange(ex) and complete(ex) then
      local key, labels, role = traffic.of(self.peers, member, ex.role, ex.remote, ex.protocol)
      self.meters:http(key, member, labels, role, ex)
      self.exchanges = self.exchanges + 1
      if self.sampler:offer(member, ex) then
        self.sampled = self.sampled + 1
      end
    end
  end
end

-- What the task has to send since the last report: { meters = list of
-- MeterDataCollection, logs = list of LogData, events = list of
-- SpanAttachedEvent }. now_ms: wall clock; clock: { seconds, nanos }, the
-- wall clock minus the tracer's monotonic clock.
function _M:report(now_ms, clock)
  self.conns:drain(function(c, counts)
    local key, labels, role = traffic.of(self.peers, c.member, c.role, c.remote, c.protocol)
    self.meters:l4(key, c.member, labels, role, counts)
  end)
  local logs, events = {}, {}
  for _, s in ipairs(self.sampler:take()) do
    logs[#logs + 1] = traces.log(s, self.peers, now_ms)
    for _, e in ipairs(traces.events(s, clock)) do
      events[#events + 1] = e
    end
  end
  self.conns:forget_closed()
  if self.conns.forgotten > self.forgotten_logged then
    self.opts.log("warn", "task %s: forgot %d accepted connections whose process was not known yet (%d so far)",
      self.task.id, self.conns.forgotten - self.forgotten_logged, self.conns.forgotten)
    self.forgotten_logged = self.conns.forgotten
  end
  if self.opts.on_report then
    self.opts.on_report(self:stats())
  end
  return { meters = self.meters:take(now_ms), logs = logs, events = events }
end

-- Counts for the module's own metrics, since the task started: exchanges
-- metered, traces sampled.
function _M:stats()
  return { exchanges = self.exchanges, sampled = self.sampled }
end

return _M
