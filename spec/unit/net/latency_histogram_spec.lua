-- net_latency_histogram_spec.lua - the percentiles of trace's summary:
-- within 1% of the exact nearest-rank value, from bounded memory.
local latency_histogram = require("moonrover.net.latency_histogram")

local function near(want, got)
  assert.is_true(math.abs(got - want) <= want * 0.01, ("want %g, got %g"):format(want, got))
end

describe("latency histogram", function()
  it("gives the nearest-rank percentiles within 1%", function()
    local h = latency_histogram.new()
    for i = 1, 1000 do
      h:add(i * 1e6)
    end
    local p = h:percentiles({ 0.5, 0.9, 0.99 })
    near(500e6, p[1])
    near(900e6, p[2])
    near(990e6, p[3])
    assert.equal(1000, h.count)
  end)

  it("gives every percentile of a single duration as that duration", function()
    local h = latency_histogram.new()
    h:add(2.5e6)
    for _, v in ipairs(h:percentiles({ 0.5, 0.9, 0.99 })) do
      near(2.5e6, v)
    end
  end)

  it("separates a slow tail from a fast majority", function()
    local h = latency_histogram.new()
    for _ = 1, 95 do
      h:add(1e6)
    end
    for _ = 1, 5 do
      h:add(300e6)
    end
    local p = h:percentiles({ 0.5, 0.9, 0.99 })
    near(1e6, p[1])
    near(1e6, p[2])
    near(300e6, p[3])
  end)

  it("keeps at most MAX_BUCKETS buckets whatever the durations, from a nanosecond to days", function()
    local h = latency_histogram.new()
    local ns = 1
    while ns < 1e15 do
      h:add(ns)
      ns = ns * 1.001
    end
    local n = 0
    for _ in pairs(h.buckets) do
      n = n + 1
    end
    assert.equal(latency_histogram.MAX_BUCKETS, n)
    assert.equal(1048, n)
    near(1e12, h:percentiles({ 1 })[1])
  end)

  it("has no percentile when empty", function()
    assert.same({}, latency_histogram.new():percentiles({ 0.5, 0.99 }))
  end)
end)
