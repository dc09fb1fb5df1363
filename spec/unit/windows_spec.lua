-- Specs for moonrover.windows: one-second slots, counting slots over a
-- threshold, percentiles and means over the last p slots, resizing.
local windows = require("moonrover.windows")

describe("windows", function()
  it("keeps one value per second, the last one added in it", function()
    local w = windows.new(5)
    w:add(10.2, 1):add(10.9, 3):add(11.5, 7)
    assert.equal(3, w:get(10))
    assert.equal(7, w:get(11.99))
    assert.is_nil(w:get(12))
  end)

  it("sums what add_to adds in one second", function()
    local w = windows.new(5)
    w:add_to(10.1, 2):add_to(10.7, 5):add_to(11, 1)
    assert.equal(7, w:get(10))
    assert.equal(1, w:get(11))
  end)

  it("counts the slots over a threshold among the last p ending at now", function()
    local w = windows.new(10)
    for s, v in ipairs({ 90, 10, 95, 85, 20 }) do
      w:add(100 + s, v)
    end
    assert.equal(3, w:count_over(80, 5, 105))
    assert.equal(2, w:count_over(80, 3, 105))
    assert.equal(2, w:count_over(80, 2, 104.5))
    assert.equal(1, w:count_over(90, 2, 104.5))
    assert.equal(0, w:count_over(95, 5, 105))
  end)

  it("does not count seconds with no value as over", function()
    local w = windows.new(5)
    w:add(1, 99):add(3, 99)
    assert.equal(2, w:count_over(50, 5, 5))
    assert.is_false(w:at_least(3, 5, 50, 5))
    assert.equal(0, w:count_over(50, 2, 5))
  end)

  it("answers at_least c of the last p over a threshold", function()
    local w = windows.new(5)
    for s = 1, 5 do
      w:add(s, s % 2 == 1 and 90 or 10)
    end
    assert.is_true(w:at_least(3, 5, 80, 5))
    assert.is_false(w:at_least(3, 4, 80, 5))
  end)

  it("never reads a value older than the window as a new one", function()
    local w = windows.new(3)
    w:add(1, 99)
    assert.equal(0, w:count_over(50, 3, 4))
    assert.is_nil(w:get(4))
    w:add(10, 5)
    w:add(2, 99)
    assert.equal(5, w:get(10))
    assert.is_nil(w:get(2))
  end)

  it("measures from the newest second added when now is not given", function()
    local w = windows.new(4)
    w:add(7, 90):add(8, 90)
    assert.equal(2, w:count_over(50))
    assert.equal(90, w:mean())
  end)

  it("gives percentiles by nearest rank and means of the seconds with values", function()
    local w = windows.new(10)
    for s = 1, 10 do
      w:add(s, s * 10)
    end
    assert.equal(100, w:percentile(1, 10, 10))
    assert.equal(50, w:percentile(0.5, 10, 10))
    assert.equal(90, w:percentile(0.9, 10, 10))
    assert.equal(10, w:percentile(0, 10, 10))
    assert.equal(90, w:mean(3, 10))
    assert.is_nil(w:mean(3, 30))
    assert.is_nil(w:percentile(0.5, 3, 30))
  end)

  it("keeps the newest seconds when resized, smaller or larger", function()
    local w = windows.new(5)
    for s = 1, 5 do
      w:add(s, s)
    end
    w:resize(3)
    assert.same({ 3, 4, 5 }, { w:get(3), w:get(4), w:get(5) })
    assert.is_nil(w:get(2))
    w:resize(6)
    w:add(6, 6):add(7, 7):add(8, 8)
    assert.equal(6, w:count_over(0, 6, 8))
    assert.equal(3, w:get(3))
  end)

  it("refuses a count of slots that is not a whole number >= 1", function()
    assert.has_error(function() windows.new(0) end, "windows.new(n): n must be a whole number of slots >= 1, not 0")
    assert.has_error(function() windows.new(2):resize(1.5) end)
    assert.has_error(function() windows.new(2):percentile(50, 2, 1) end,
      "percentile(q, p, now): q must be a number from 0 to 1, not 50")
  end)
end)

describe("windows export and import", function()
  it("carries a window's slots across a reload as plain data", function()
    local w = windows.new(4)
    for s = 1, 6 do
      w:add(s + 0.5, s * 10)
    end
    local data = w:export()
    assert.same({ n = 4, slots = { { 3, 30 }, { 4, 40 }, { 5, 50 }, { 6, 60 } } }, data)
    local back = windows.import(data)
    assert.equal(3, back:count_over(35, 4, 6))
    assert.equal(60, back:get(6))
    assert.is_nil(back:get(2))
  end)

  it("refuses what export did not give", function()
    assert.has_error(function() windows.import(nil) end,
      "windows.import(data): data must be what w:export() returned")
  end)
end)
