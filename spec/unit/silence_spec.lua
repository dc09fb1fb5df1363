-- Specs for moonrover.silence: cooldowns per key on an injected clock.
local silence = require("moonrover.silence")

describe("silence", function()
  local now, q

  before_each(function()
    now = 100
    q = silence.new(600, function() return now end)
  end)

  it("lets a key through once, then holds it back for the silence", function()
    assert.is_true(q:try("pid:42"))
    local ok, remaining = q:try("pid:42")
    assert.is_false(ok)
    assert.equal(600, remaining)
    now = 699
    ok, remaining = q:try("pid:42")
    assert.is_false(ok)
    assert.equal(1, remaining)
    now = 700
    assert.is_true(q:try("pid:42"))
  end)

  it("keeps keys apart, whatever their type", function()
    local key = { policy = "p" }
    assert.is_true(q:try(42))
    assert.is_true(q:try("42"))
    assert.is_true(q:try(key))
    assert.is_false(q:try(key))
    assert.is_true(q:try({ policy = "p" }))
  end)

  it("tells the time remaining, 0 for a key not silenced", function()
    assert.equal(0, q:remaining("a"))
    q:try("a")
    now = 160
    assert.equal(540, q:remaining("a"))
    now = 800
    assert.equal(0, q:remaining("a"))
  end)

  it("ends a silence on clear", function()
    q:try("a")
    q:clear("a")
    assert.equal(0, q:remaining("a"))
    assert.is_true(q:try("a"))
  end)

  it("takes a length per try", function()
    assert.is_true(q:try("a", 10))
    now = 110
    assert.is_true(q:try("a"))
    assert.equal(600, q:remaining("a"))
  end)

  it("forgets keys whose silence ended", function()
    q:try("a")
    now = 1000
    q:try("b")
    assert.is_nil(q.ends.a)
  end)

  it("refuses a nil key and a bad length", function()
    assert.has_error(function() q:try(nil) end, "try(key): key must not be nil")
    assert.has_error(function() silence.new(-1) end,
      "silence.new(seconds, now_fn): seconds must be a number of seconds >= 0, not -1")
    assert.has_error(function() q:try("a", "x") end)
  end)
end)

describe("silence export and import", function()
  it("carries the silences running, with the time each had left, across a reload", function()
    local now = 100
    local q = silence.new(600, function() return now end)
    q:try("a")
    q:try(42, 10)
    q:try({})
    now = 105
    local data = q:export()
    table.sort(data.remaining, function(x, y) return tostring(x[1]) < tostring(y[1]) end)
    assert.same({ seconds = 600, remaining = { { 42, 5 }, { "a", 595 } } }, data)
    local later = 5000
    local back = silence.import(data, function() return later end)
    assert.equal(595, back:remaining("a"))
    assert.equal(5, back:remaining(42))
    assert.is_false(back:try("a"))
  end)

  it("refuses what export did not give", function()
    assert.has_error(function() silence.import({}) end,
      "silence.import(data, now_fn): data must be what q:export() returned")
  end)
end)
