-- reload_command.lua - `moonrover reload`: asks the running agent to reload its
-- scripts (SIGHUP through its pid file, only to the process holding that file's
-- lock: see runtime/files/pid_file.h).
local rt = require("moonrover.rt")

local _M = {
  summary = "make the running agent reload its scripts",
  usage = "moonrover reload [--pid-file FILE]",
  description = "Sends SIGHUP to the agent named by its pid file, if that process holds the file's\n" ..
    "lock (a stale file, or one naming another command, is refused and nothing is\n" ..
    "signalled). The agent tries the new scripts on a canary batch and swaps them in\n" ..
    "only if all succeed; its log and /metrics (moonrover_reload_last_success) say how\n" ..
    "it went.",
  options = {
    { name = "pid-file", arg = "FILE", default = "/run/moonrover.pid", help = "the agent's pid file" },
  },
}

function _M.run(values)
  local pid, err = rt.call(rt.lib.mr_agent_reload, values["pid-file"])
  if not pid then
    io.stderr:write("moonrover reload: " .. err .. "\n")
    return 1
  end
  io.stdout:write(string.format("asked the agent (pid %d) to reload its scripts\n", pid))
  return 0
end

return _M
