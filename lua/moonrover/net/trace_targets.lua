-- trace_targets.lua - the processes `moonrover trace -p PID` or `--comm
-- NAME` follows: those given (or named NAME) and every descendant, found in
-- /proc when the trace starts (nginx's workers, forked long before) and from
-- the process stream's fork events later; a process that execs a program
-- named NAME joins a --comm trace. Each one is added to the kernel's filter
-- as it is found and removed when it has exited: at its exit event if it is
-- gone by then (a leader thread's exit is reported while other threads of it
-- may run), and at the sweep the caller makes every second, which finds the
-- exits whose event was lost and pids given to another process since (a
-- process is its pid and its start time). Pure: the process table, the
-- filter and the start times are given.
local _M = {}
local mt = { __index = _M }

local C = require("moonrover.consts")
local tables = require("moonrover.lib.tables")

local FORK, EXEC, EXIT = C.MR_PROCESS_FORK, C.MR_PROCESS_EXEC, C.MR_PROCESS_EXIT

-- The pids of procs (a list of { pid, ppid, comm }) that descend from a pid
-- for which chosen(proc) is true, or are one.
local function descendants(procs, chosen)
  local children, out, stack = {}, {}, {}
  for _, p in ipairs(procs) do
    children[p.ppid] = children[p.ppid] or {}
    table.insert(children[p.ppid], p.pid)
    if chosen(p) then
      stack[#stack + 1] = p.pid
    end
  end
  while #stack > 0 do
    local pid = table.remove(stack)
    if not out[pid] then
      out[pid] = true
      for _, child in ipairs(children[pid] or {}) do
        stack[#stack + 1] = child
      end
    end
  end
  return out
end

-- opts: comm (the process name of a --comm trace, or nil); set(pid, add)
-- -> true, or nil and why (the kernel's filter); start_of(pid) -> when the
-- process started, or nil when there is none. total counts the processes
-- followed over the trace, not_followed those the filter refused.
function _M.new(opts)
  return setmetatable({ opts = opts, followed = {}, total = 0, not_followed = 0 }, mt)
end

local function add(self, pid)
  if self.followed[pid] then
    return
  end
  local start = self.opts.start_of(pid)
  if not start then
    self.opts.set(pid, false)
    return
  end
  if not self.opts.set(pid, true) then
    self.not_followed = self.not_followed + 1
    return
  end
  self.followed[pid] = start
  self.total = self.total + 1
end

local function remove(self, pid)
  self.followed[pid] = nil
  self.opts.set(pid, false)
end

-- Whether the process followed as pid is still the one that runs.
local function running(self, pid)
  return self.opts.start_of(pid) == self.followed[pid]
end

-- The processes to follow among procs (from /proc): those of opts.pids (a
-- list) or named opts.comm, and their descendants; a list, sorted.
function _M.initial(opts, procs)
  local given = {}
  for _, pid in ipairs(opts.pids or {}) do
    given[pid] = true
  end
  local set = descendants(procs, function(p)
    return given[p.pid] or p.comm == opts.comm
  end)
  return tables.sorted_keys(set)
end

-- Follows every pid of list (the kernel's filter may hold some already).
function _M:follow(list)
  for _, pid in ipairs(list) do
    add(self, pid)
  end
end

-- One process event (struct mr_process_event, or a table alike).
function _M:on_process_event(e)
  local kind, pid = e.kind, e.pid
  if kind == FORK and self.followed[e.ppid] then
    add(self, pid)
  elseif kind == EXEC and self.opts.comm and e.comm == self.opts.comm then
    add(self, pid)
  elseif kind == EXIT and self.followed[pid] and not running(self, pid) then
    remove(self, pid)
  end
end

-- Removes every process followed that has exited (its exit event lost, or
-- seen while its other threads ran) or whose pid another process has now.
function _M:sweep()
  for pid in pairs(self.followed) do
    if not running(self, pid) then
      remove(self, pid)
    end
  end
end

-- Whether every process followed has exited, as far as the exit events and
-- the last sweep tell.
function _M:all_gone()
  return next(self.followed) == nil
end

return _M
