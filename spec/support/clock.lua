-- clock.lua - time for specs, read from libc (no process started): the wall
-- clock in epoch milliseconds, to compare with the times servers record, and
-- bounded waits measured on the monotonic clock.
local ffi = require("ffi")

-- Either may be declared already by another module loaded in the same state.
pcall(ffi.cdef, "struct timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, "int clock_gettime(int clock_id, struct timespec *tp);")

local CLOCK_REALTIME, CLOCK_MONOTONIC = 0, 1

local _M = {}

local ts = ffi.new("struct timespec")

local function seconds(clock_id)
  assert(ffi.C.clock_gettime(clock_id, ts) == 0, "clock_gettime failed")
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

-- Epoch milliseconds, an integer.
function _M.now_ms()
  return math.floor(seconds(CLOCK_REALTIME) * 1000)
end

-- Seconds on a clock that never jumps, for deadlines.
function _M.monotonic()
  return seconds(CLOCK_MONOTONIC)
end

-- Calls fn() every 0.1 s until it returns a true value, for at most `limit`
-- seconds (default 10) on the monotonic clock, then once more at the
-- deadline: a slow machine delays the calls but never shortens the wait.
-- Returns that value, or nil.
function _M.wait_for(fn, limit)
  local deadline = _M.monotonic() + (limit or 10)
  while true do
    local v = fn()
    if v then
      return v
    end
    if _M.monotonic() >= deadline then
      return nil
    end
    os.execute("sleep 0.1")
  end
end

return _M
