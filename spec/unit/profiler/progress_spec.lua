-- Specs for `moonrover profile`'s live status line (profiler/progress.lua):
-- its text, about once a second, and nothing off a terminal.
local progress = require("moonrover.profiler.progress")

local S = 1e9

local function recorder(tty)
  local out = {}
  local shown = progress.new({ tty = tty, write = function(text) out[#out + 1] = text end, started_ns = 100 * S,
    duration_ns = 10 * S })
  return shown, out
end

describe("profiling.progress", function()
  it("says elapsed / duration, samples, lost and processes so far", function()
    assert.same("profiling 3.0 s / 10.0 s   samples 12,345   lost 7   processes 4",
      progress.text(3 * S, 10 * S, { samples = 12345, lost_stack_full = 5, lost_notify = 2, processes = 4 }))
  end)

  it("never shows more time elapsed than the duration", function()
    assert.matches("^profiling 10.0 s / 10.0 s", progress.text(10.4 * S, 10 * S, {}))
  end)

  it("puts a warning on a line of its own above the status line, and alone off a terminal", function()
    local shown, out = recorder(true)
    shown:tick(101 * S, function() return { samples = 1 } end)
    shown:warn("moonrover profile: careful")
    assert.same("\r\27[Kmoonrover profile: careful\nprofiling 1.0 s / 10.0 s   samples 1   lost 0   processes 0",
      out[2])
    shown, out = recorder(false)
    shown:warn("moonrover profile: careful")
    assert.same({ "moonrover profile: careful\n" }, out)
  end)

  it("rewrites the line about once a second, reading the stats only then", function()
    local shown, out = recorder(true)
    local reads = 0
    local function stats()
      reads = reads + 1
      return { samples = reads * 100, processes = 1 }
    end
    for _, t in ipairs({ 100.2, 100.6, 101.0, 101.2, 101.8, 102.1, 104.5 }) do
      shown:tick(t * S, stats)
    end
    shown:finish()
    assert.same(3, reads)
    assert.same({ "\r\27[Kprofiling 1.0 s / 10.0 s   samples 100   lost 0   processes 1",
      "\r\27[Kprofiling 2.1 s / 10.0 s   samples 200   lost 0   processes 1",
      "\r\27[Kprofiling 4.5 s / 10.0 s   samples 300   lost 0   processes 1", "\r\27[K" }, out)
  end)

  it("shows nothing and reads no stats when stderr is not a terminal", function()
    local shown, out = recorder(false)
    shown:tick(105 * S, function() error("stats read off a terminal") end)
    shown:finish()
    assert.same({}, out)
  end)
end)
