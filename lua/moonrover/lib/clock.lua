-- clock.lua - the monotonic clock as Lua reads it: CLOCK_MONOTONIC, the clock
-- of the kernel events' timestamps, in nanoseconds or seconds. The runtime is
-- loaded on the first reading, so modules that take an injected clock stay
-- usable without it.
local _M = {}

local lib

local function runtime()
  lib = lib or require("moonrover.rt").lib
  return lib
end

-- Nanoseconds, as a Lua number (exact for 104 days of uptime per ulp of 1 ns,
-- then to the microsecond for centuries: enough for every duration here).
function _M.monotonic_ns()
  return tonumber(runtime().mr_sys_monotonic_ns())
end

-- Seconds, with the fraction.
function _M.monotonic_s()
  return tonumber(runtime().mr_sys_monotonic_ns()) / 1e9
end

return _M
