-- pid_list.lua - the processes a command was given with -p: whether each
-- exists when the command starts, and whether all have exited since (then
-- `profile` and `trace` stop).
local rt = require("moonrover.rt")

local _M = {}

-- true, or nil and the first pid that names no process.
function _M.check(pids)
  for _, pid in ipairs(pids or {}) do
    if rt.lib.mr_proc_exists(pid) ~= 1 then
      return nil, "no process with pid " .. pid
    end
  end
  return true
end

-- Whether every process of pids has exited.
function _M.all_gone(pids)
  for _, pid in ipairs(pids) do
    if rt.lib.mr_proc_exists(pid) == 1 then
      return false
    end
  end
  return true
end

return _M
