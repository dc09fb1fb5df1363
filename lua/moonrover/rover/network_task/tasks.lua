-- tasks.lua - what the Rover drop-in's NETWORK tasks share, for drop_in.lua:
-- the script's network streams, the sender of their reports (through the
-- OAP client's MeterReportService, LogReportService and
-- SpanAttachedEventReportService calls) and the runner of each task, with
-- its own metrics (exchanges metered, traces sampled).
local oap_client = require("moonrover.rover.oap_client")
local runner = require("moonrover.rover.network_task.runner")
local sender = require("moonrover.rover.network_task.sender")
local streams = require("moonrover.rover.network_task.streams")

local _M = {}
local mt = { __index = _M }

local RPCS = { collectMeterBatch = oap_client.COLLECT_METER_BATCH, collectLogs = oap_client.COLLECT_LOGS,
  collectSpanEvents = oap_client.COLLECT_SPAN_EVENTS }

-- agent: the script's agent API; meter_prefix: profiling.task.network's;
-- deps:
--   call(path, rpc, request_type, messages)   a client stream to OAP (rpc:
--     its short name, for the drop-in's status and metrics)
--   regex(pattern), now_ms()                          finder_facts'
function _M.new(agent, meter_prefix, deps)
  local self = setmetatable({ agent = agent }, mt)
  self.opts = {
    prefix = meter_prefix, regex = deps.regex, streams = streams.new(agent.on),
    log = function(level, fmt, ...) agent.log[level](fmt, ...) end,
    sender = sender.new({
      stream = function(rpc, request_type, messages)
        deps.call(RPCS[rpc], rpc, request_type, messages)
      end,
      now_ms = deps.now_ms,
      monotonic_ns = function() return agent.now() * 1e9 end,
    }),
  }
  return self
end

-- The runner of a NETWORK task (task_manager's new_runner) whose processes
-- (in the order of task.process_ids) are scanned processes.
function _M:runner(task, processes)
  local members = {}
  for i, p in ipairs(processes) do
    members[i] = { pid = p.pid, id = task.process_ids[i], entity = p.entity }
  end
  local labels = { task = task.id, process = table.concat(task.process_ids, ",") }
  local exchanges = self.agent.gauge("moonrover_rover_task_exchanges", "HTTP exchanges of a NETWORK task's "
    .. "processes metered so far", labels)
  local sampled = self.agent.gauge("moonrover_rover_task_sampled_traces", "Requests a NETWORK task sampled as "
    .. "traces so far", labels)
  local opts = setmetatable({ on_report = function(stats)
    exchanges:set(stats.exchanges)
    sampled:set(stats.sampled)
  end }, { __index = self.opts })
  return runner.new(task, members, opts)
end

-- Sends what every task has to report since the last send.
function _M:send()
  self.opts.sender:send()
end

-- What is not sent yet, for the next version across a hot reload; and
-- taking it back (see sender.lua).
function _M:hand_over()
  return self.opts.sender:hand_over()
end

function _M:take_over(state)
  self.opts.sender:take_over(state)
end

return _M
