-- agent_events.lua - `moonrover agent` with the event-path benchmark's stream
-- ("bench", runtime/api_test.h's mr_agent_run_bench: one struct
-- mr_bench_event per getppid() call of BENCH_PID), for agent_events.sh. The
-- agent's own command line follows the pid; its scripts declare the test API
-- (require("moonrover.rt").with_test_api()) before moonrover.agent to see the
-- stream.
--   usage (from the repo root, as root):
--   MOONROVER_LIB=build/libmoonrover.so luajit scripts/bench/agent_events.lua BENCH_PID [AGENT OPTIONS]
-- The bundled Lua, then the build's generated modules (moonrover.consts).
package.path = "lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") .. "/?.lua;" ..
  package.path
local args = require("moonrover.lib.args")
local agent_command = require("moonrover.commands.agent_command")
local rt = require("moonrover.rt").with_test_api()

local bench_pid = tonumber(arg[1])
if not bench_pid then
  io.stderr:write("usage: agent_events.lua BENCH_PID [AGENT OPTIONS]\n")
  os.exit(2)
end
local values, positional, given = args.parse(agent_command.options, { select(2, unpack(arg)) })
if not values or #positional > 0 then
  io.stderr:write("agent_events.lua: " .. tostring(values and positional[1] or positional) .. "\n")
  os.exit(2)
end
os.exit(agent_command.run(values, given, function(c)
  return rt.call(rt.lib.mr_agent_run_bench, c, bench_pid)
end))
