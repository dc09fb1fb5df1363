-- sender.lua - sends what the running NETWORK tasks counted and sampled, at
-- every report interval (profiling.task.network.report_interval, 2 s): the
-- meters through MeterReportService.collectBatch, the sampled traces'
-- LogData through LogReportService.collect and their SpanAttachedEvents
-- through SpanAttachedEventReportService.collect, each a client stream, only
-- when there is something to send. A task that ends hands over its last
-- report, sent with the next one. As in Rover, a report whose send fails is
-- not sent again (its meters are the deltas of an interval that is over);
-- deps.stream counts the failure.
--
-- deps:
--   stream(rpc, request_type, messages)   one client-stream call (its caller
--                                         hears how it ended)
--   now_ms()          wall clock, ms
--   monotonic_ns()    the tracer's clock, ns
local _M = {}
local mt = { __index = _M }

_M.CALLS = {
  { "meters", "collectMeterBatch", "skywalking.v3.MeterDataCollection" },
  { "logs", "collectLogs", "skywalking.v3.LogData" },
  { "events", "collectSpanEvents", "skywalking.v3.SpanAttachedEvent" },
}

-- deps: see the top of this file.
function _M.new(deps)
  return setmetatable({ deps = deps, runners = {}, left = { meters = {}, logs = {}, events = {} } }, mt)
end

-- The wall clock minus the monotonic one, split as traces.lua wants it.
function _M.clock(epoch_ms, mono_ns)
  local wall_s = math.floor(epoch_ms / 1000)
  local mono_s = math.floor(mono_ns / 1e9)
  return { seconds = wall_s - mono_s, nanos = math.floor((epoch_ms - wall_s * 1000) * 1e6) - (mono_ns - mono_s * 1e9) }
end

local function append(into, report)
  for kind, list in pairs(report) do
    for _, m in ipairs(list) do
      into[kind][#into[kind] + 1] = m
    end
  end
end

local function report_of(self, runner)
  local now = self.deps.now_ms()
  return runner:report(now, _M.clock(now, self.deps.monotonic_ns()))
end

-- Sends runner's reports from the next send on.
function _M:add(runner)
  self.runners[runner] = true
end

-- Takes runner's last report, for the next send.
function _M:remove(runner)
  if self.runners[runner] then
    self.runners[runner] = nil
    append(self.left, report_of(self, runner))
  end
end

-- What is not sent yet: the last reports of finished tasks and the reports
-- of the running ones since the last send, as plain data. A hot reload hands
-- it to the next version (take_over), which sends it with its first report.
function _M:hand_over()
  local out = self.left
  self.left = { meters = {}, logs = {}, events = {} }
  for runner in pairs(self.runners) do
    append(out, report_of(self, runner))
  end
  return out
end

-- Takes what hand_over() gave (this sender's own, when a reload was refused,
-- or the previous version's), for the next send.
function _M:take_over(state)
  append(self.left, { meters = state.meters or {}, logs = state.logs or {}, events = state.events or {} })
end

-- Sends the reports of every task since the last send.
function _M:send()
  local out = self:hand_over()
  for _, call in ipairs(_M.CALLS) do
    local kind, rpc, request_type = call[1], call[2], call[3]
    local messages = out[kind]
    if #messages > 0 then
      self.deps.stream(rpc, request_type, messages)
    end
  end
end

return _M
