-- progress.lua - the live status line of `moonrover profile` on a terminal:
-- elapsed / duration, samples, lost and processes so far, rewritten about once
-- a second through lib/status_line.lua (which shows nothing off a terminal).
-- Pure: the caller gives the clock readings and the profiler's running stats.
local profiler = require("moonrover.profiler.profiler")
local status_line = require("moonrover.lib.status_line")

local _M = {}

local Progress = {}
Progress.__index = Progress

local INTERVAL_NS = 1e9

-- 1234567 -> "1,234,567".
local function group(n)
  local digits = string.format("%.0f", n):reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (digits:gsub("^,", ""))
end

local function lost_of(stats)
  local sum = 0
  for _, lost in ipairs(profiler.LOST) do
    sum = sum + (stats[lost.field] or 0)
  end
  return sum
end

-- The status text after elapsed_ns of duration_ns, with the running stats.
function _M.text(elapsed_ns, duration_ns, stats)
  return string.format("profiling %.1f s / %.1f s   samples %s   lost %s   processes %s",
    math.min(elapsed_ns, duration_ns) / 1e9, duration_ns / 1e9, group(stats.samples or 0),
    group(lost_of(stats)), group(stats.processes or 0))
end

-- opts: { tty = boolean, write = function(text) (default stderr), started_ns, duration_ns }.
function _M.new(opts)
  return setmetatable({ line = status_line.new({ tty = opts.tty, write = opts.write }),
    started_ns = opts.started_ns, duration_ns = opts.duration_ns,
    next_ns = opts.started_ns + INTERVAL_NS }, Progress)
end

-- Shows the line when a second has passed since the last one; stats() is
-- called only then.
function Progress:tick(now_ns, stats)
  if not self.line.tty or now_ns < self.next_ns then
    return
  end
  self.line:update(_M.text(now_ns - self.started_ns, self.duration_ns, stats()))
  repeat
    self.next_ns = self.next_ns + INTERVAL_NS
  until self.next_ns > now_ns
end

-- A warning on a line of its own, above the status line.
function Progress:warn(text)
  self.line:warn(text)
end

-- Erases the line before the summary is printed.
function Progress:finish()
  self.line:clear()
end

return _M
