-- trace_progress.lua - what `moonrover trace` tells the person running it
-- while it runs: a status line of running totals (elapsed time, records
-- lost first, so that a narrow line keeps them, exchanges printed,
-- connections followed) rewritten about once a second
-- on a terminal, and, terminal or not, one warning line as soon as records
-- start being lost, rather than a figure in the summary at the end. Pure:
-- the status line (lib/status_line.lua) and the figures are given.
local _M = {}
local mt = { __index = _M }

local PERIOD_S = 1

-- line: a status_line object.
function _M.new(line)
  return setmetatable({ line = line, next_s = PERIOD_S, warned = false }, mt)
end

-- The records lost so far, by reason, from the source's stats(): what never
-- reached the tracer.
function _M.lost(stats)
  local k, reasons = stats.kernel, {}
  local parts = {
    { "kernel ring full", k.lost_data + k.lost_events },
    { "queue full", stats.net.dropped_queue + stats.tcp.dropped_queue },
  }
  local total = 0
  for _, p in ipairs(parts) do
    if p[2] > 0 then
      reasons[#reasons + 1] = p[1]
      total = total + p[2]
    end
  end
  return total, table.concat(reasons, ", ")
end

local function status_text(f)
  return string.format("%ds  lost %d  %d printed  %d conns", math.floor(f.elapsed_s), f.lost, f.printed,
    f.connections)
end

-- Called often (every tick): f = { elapsed_s, printed, connections, lost,
-- lost_reasons }.
function _M:update(f)
  if f.lost > 0 and not self.warned then
    self.warned = true
    self.line:warn(string.format("moonrover trace: losing records (%d so far: %s); the summary counts them all " ..
      "(a larger --queue-bytes, -p or --comm lose fewer)", f.lost, f.lost_reasons))
  end
  if f.elapsed_s >= self.next_s then
    self.next_s = math.floor(f.elapsed_s / PERIOD_S) * PERIOD_S + PERIOD_S
    self.line:update(status_text(f))
  end
end

-- The trace is over: the status line goes before the summary is written.
function _M:finish()
  self.line:clear()
end

return _M
