-- pid_list.lua - the processes a command was given with -p: whether each
-- exists when the command starts, and whether all have exited since (then
-- `profile` and `trace` stop); the live pids of /proc and what is read of
-- each (the one listing of them, processes.lua's too); the process table (pid, parent, name) from
-- which `trace` finds the descendants it follows; a process's identity (pid
-- and start time, which a reused pid does not share); and whether a process
-- is a moonrover (which `trace` leaves out).
local facts = require("moonrover.rover.finder_facts")
local rt = require("moonrover.rt")

local _M = {}

local FIRST_ROOM = 4096
local STAT_BYTES = 1024

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

-- When process pid started (ns since boot), or nil when there is none: with
-- the pid, what tells a process from a later one given the same pid.
function _M.start_of(pid)
  local ns = facts.start_ns(pid)
  return ns and ns > 0 and ns or nil
end

-- The live pids (an int32_t array) and how many, or nil and why.
function _M.live_pids()
  local room = FIRST_ROOM
  while true do
    local pids = rt.ffi.new("int32_t[?]", room)
    local n, err = rt.call(rt.lib.mr_proc_list, pids, room)
    if not n then
      return nil, err
    end
    if n < room then
      return pids, n
    end
    room = room * 2
  end
end

-- { pid, ppid, comm } of the process whose stat line is text, or nil. The
-- name is between the first "(" and the last ")": it may hold either.
local function parse_stat(pid, text)
  local comm, ppid = text:match("^%d+ %((.*)%) %S+ (%d+)")
  return comm and { pid = pid, ppid = tonumber(ppid), comm = comm } or nil
end

-- What is known of each live pid, in the order of /proc: prepare(pids, n)
-- returns the function of an index of pids that tells it (nil for a process
-- that exited meanwhile, left out). A list, or nil and why.
function _M.map_live(prepare)
  local pids, n = _M.live_pids()
  if not pids then
    return nil, n
  end
  local about, out = prepare(pids, n), {}
  for i = 0, n - 1 do
    local p = about(i)
    if p then
      out[#out + 1] = p
    end
  end
  return out
end

-- The processes of /proc: a list of { pid, ppid, comm } (those that exit
-- while it is read are left out), or nil and why.
function _M.processes()
  return _M.map_live(function(pids)
    local buf = rt.ffi.new("char[?]", STAT_BYTES)
    return function(i)
      local len = rt.lib.mr_proc_read(pids[i], "stat", buf, STAT_BYTES, nil, 0)
      return len > 0 and parse_stat(pids[i], rt.ffi.string(buf, len))
    end
  end)
end

local own_exe

-- Whether pid runs moonrover: this very executable, or one named moonrover
-- (another build, an agent installed elsewhere).
function _M.is_moonrover(pid)
  own_exe = own_exe or facts.exe(rt.lib.mr_proc_self()) or false
  local exe = facts.exe(pid)
  return exe ~= nil and (exe == own_exe or exe:match("[^/]+$") == "moonrover")
end

return _M
