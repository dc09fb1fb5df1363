-- process_events.lua (bundled) - counts process lifecycle events on /metrics:
-- moonrover_process_events_total{kind="exec"|"exit"|"fork"} and the exits with
-- a non-zero status. Replace it by putting a process_events.lua in --scripts.
local agent = require("moonrover.agent")

local HELP = "Process lifecycle events seen by the agent"
local counts = {
  [agent.EXEC] = agent.counter("moonrover_process_events_total", HELP, { kind = "exec" }),
  [agent.EXIT] = agent.counter("moonrover_process_events_total", HELP, { kind = "exit" }),
  [agent.FORK] = agent.counter("moonrover_process_events_total", HELP, { kind = "fork" }),
}
local failed = agent.counter("moonrover_process_failed_exits_total",
  "Processes that exited with a non-zero status or were killed by a signal")

agent.on("process", function(batch)
  local n = { [agent.EXEC] = 0, [agent.EXIT] = 0, [agent.FORK] = 0 }
  local bad = 0
  for ev in batch:each() do
    n[ev.kind] = (n[ev.kind] or 0) + 1
    if ev.kind == agent.EXIT and ev.exit_code ~= 0 then
      bad = bad + 1
    end
  end
  for kind, c in pairs(counts) do
    if n[kind] > 0 then
      c:add(n[kind])
    end
  end
  if bad > 0 then
    failed:add(bad)
  end
end)
