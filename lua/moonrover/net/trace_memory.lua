-- trace_memory.lua - gives `moonrover trace`'s memory back after a burst.
-- The collector runs as memory is allocated: when a storm of connections
-- stops, the garbage of its last seconds (tens of MiB) stays in the heap
-- as long as the trace goes on quietly, and with it the process's RSS. So,
-- once a second, a second that moved few records (QUIET_RECORDS) while the
-- heap holds more than HEAP_MIN and half again what the last full
-- collection left ends with a full collection: it took 50-80 ms for 70 MiB,
-- which a quiet second's queue rides out (a busy one never pays it, the
-- tracer's budget governs there). The heap then shrinks and LuaJIT's
-- allocator returns the pages it can.
local _M = {}
local mt = { __index = _M }

local QUIET_RECORDS = 2000
local HEAP_MIN_KB = 32768
local GROWTH = 1.5

-- gc: { count = function() -> KiB, collect = function() } (default: the
-- Lua collector's).
function _M.new(gc)
  gc = gc or { count = function() return collectgarbage("count") end, collect = function() collectgarbage() end }
  return setmetatable({ gc = gc, left_kb = 0 }, mt)
end

-- A second is over, in which records were moved; true when it collected.
function _M:second(records)
  if records >= QUIET_RECORDS then
    return false
  end
  local used = self.gc.count()
  if used <= HEAP_MIN_KB or used <= self.left_kb * GROWTH then
    return false
  end
  self.gc.collect()
  self.left_kb = self.gc.count()
  return true
end

return _M
