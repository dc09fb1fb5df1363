-- reload_command.lua - `moonrover reload`: asks the running agent to reload its
-- scripts (SIGHUP through its pid file, only to the process holding that file's
-- lock: see runtime/files/pid_file.h), then waits for the agent's answer in its
-- status file and turns it into an exit code.
local args = require("moonrover.lib.args")
local rt = require("moonrover.rt")

-- The exit codes, as `reload --help` and docs/configuration.md list them.
local EXIT = { reloaded = 0, error = 1, usage = 2, refused = 3, no_answer = 4 }
local MAX_WAIT_S = 3600

local _M = {
  summary = "make the running agent reload its scripts, and wait for its answer",
  usage = "moonrover reload [--pid-file FILE] [--timeout DURATION | --no-wait]",
  description = "Sends SIGHUP to the agent named by its pid file, if that process holds the file's\n" ..
    "lock (a stale file, or one naming another command, is refused and nothing is\n" ..
    "signalled). The agent tries the new scripts on a canary batch and swaps them in\n" ..
    "only if all succeed; it writes how it went beside its pid file (FILE.status),\n" ..
    "which this command waits for.\n" ..
    "\n" ..
    "exit status:\n" ..
    "  0  the agent reloaded its scripts (with --no-wait: it was signalled)\n" ..
    "  1  no agent to ask (no pid file, a stale one), or it stopped before answering\n" ..
    "  2  a usage error\n" ..
    "  3  the agent refused the reload (its reason is printed); the previous scripts keep running\n" ..
    "  4  no answer within --timeout (the agent may still be reloading: see its log)",
}

-- A duration above zero (args.duration), and at most an hour.
local function wait_seconds(text)
  local s, err = args.duration(text)
  if s and s > MAX_WAIT_S then
    return nil, "'" .. text .. "' is more than an hour"
  end
  return s, err
end

_M.options = {
  { name = "pid-file", arg = "FILE", default = "/run/moonrover.pid", help = "the agent's pid file" },
  { name = "timeout", arg = "DURATION", default = 10, convert = wait_seconds,
    help = "how long to wait for the agent's answer (e.g. 30, 5s, 2m)" },
  { name = "no-wait", help = "only signal the agent, and exit 0 once it is signalled" },
}

function _M.run(values, given)
  if given and given.timeout and values["no-wait"] then
    io.stderr:write("moonrover reload: --timeout and --no-wait cannot go together (usage: " .. _M.usage .. ")\n")
    return EXIT.usage
  end
  local wait_ms = values["no-wait"] and 0 or math.ceil(values.timeout * 1000)
  local answer = rt.ffi.new("struct mr_agent_reload_answer")
  local pid, err = rt.call(rt.lib.mr_agent_reload, values["pid-file"], wait_ms, answer)
  if not pid then
    io.stderr:write("moonrover reload: " .. err .. "\n")
    return EXIT.error
  end
  local outcome, detail = answer.outcome, rt.ffi.string(answer.detail)
  if outcome == rt.lib.MR_RELOAD_ASKED then
    io.stdout:write(string.format("asked the agent (pid %d) to reload its scripts\n", pid))
    return EXIT.reloaded
  elseif outcome == rt.lib.MR_RELOAD_DONE then
    io.stdout:write(string.format("the agent (pid %d) reloaded its scripts: %s\n", pid, detail))
    return EXIT.reloaded
  elseif outcome == rt.lib.MR_RELOAD_REFUSED then
    io.stderr:write(string.format("moonrover reload: the agent (pid %d) refused the reload, its previous "
      .. "scripts keep running: %s\n", pid, detail))
    return EXIT.refused
  end
  io.stderr:write(string.format("moonrover reload: the agent (pid %d) did not answer within %g s; "
    .. "its log says how the reload went\n", pid, values.timeout))
  return EXIT.no_answer
end

return _M
