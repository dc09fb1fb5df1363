-- net_trace_progress_spec.lua - trace's live progress: a status line about
-- once a second on a terminal, none elsewhere, and one warning at the first
-- records lost, terminal or not (a fake source's figures drive it).
local status_line = require("moonrover.lib.status_line")
local trace_progress = require("moonrover.net.trace_progress")

local function stats(lost_data, dropped_queue)
  return { kernel = { lost_data = lost_data, lost_events = 0 }, net = { dropped_queue = dropped_queue },
    tcp = { dropped_queue = 0 } }
end

local function progress(tty)
  local written = {}
  local line = status_line.new({ tty = tty, write = function(text) written[#written + 1] = text end })
  return trace_progress.new(line), written
end

local function figures(elapsed_s, printed, s)
  local lost, reasons = trace_progress.lost(s or stats(0, 0))
  return { elapsed_s = elapsed_s, printed = printed, connections = 3, lost = lost, lost_reasons = reasons }
end

describe("trace progress", function()
  it("adds up the records lost before the tracer, naming the reasons", function()
    assert.same({ 0, "" }, { trace_progress.lost(stats(0, 0)) })
    assert.same({ 12, "kernel ring full, queue full" }, { trace_progress.lost(stats(10, 2)) })
  end)

  it("rewrites the status line about once a second on a terminal", function()
    local p, written = progress(true)
    for tick = 1, 25 do
      p:update(figures(tick / 10, tick))
    end
    assert.same({ "\r\27[K1s  lost 0  10 printed  3 conns", "\r\27[K2s  lost 0  20 printed  3 conns" }, written)
    p:finish()
    assert.equal("\r\27[K", written[3])
  end)

  it("puts the loss first, so that a narrow line keeps it", function()
    local p, written = progress(true)
    p:update(figures(1, 123456789012, stats(1234567890, 1)))
    assert.equal("\r\27[K1s  lost 1234567891  123456789012 printed  3 conns", written[2])
  end)

  it("shows no status line when standard error is not a terminal", function()
    local p, written = progress(false)
    for tick = 1, 30 do
      p:update(figures(tick / 10, tick))
    end
    p:finish()
    assert.same({}, written)
  end)

  it("warns once, at the first records lost, terminal or not", function()
    for _, tty in ipairs({ true, false }) do
      local p, written = progress(tty)
      p:update(figures(0.1, 1))
      p:update(figures(0.2, 2, stats(728749, 0)))
      p:update(figures(0.3, 3, stats(900000, 5)))
      local warnings = {}
      for _, text in ipairs(written) do
        if text:find("losing records", 1, true) then
          warnings[#warnings + 1] = text
        end
      end
      assert.equal(1, #warnings)
      assert.matches("moonrover trace: losing records %(728749 so far: kernel ring full%)", warnings[1])
    end
  end)
end)
