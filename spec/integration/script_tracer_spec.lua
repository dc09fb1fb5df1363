-- Specs for net/script_tracer.lua, the network tracer inside an agent
-- script: how it hands what the tracer completed to the script, and gives
-- exchanges back to their pool (net/exchange.lua).
local exchange = require("moonrover.net.exchange")
local script_tracer = require("moonrover.net.script_tracer")

-- The agent's metrics API as far as the tracer uses it: series that count.
local function registry()
  local series = function()
    return { add = function() end, set = function() end, observe = function() end }
  end
  return { counter = series, gauge = series, histogram = series }
end

local function tracer_delivering_to(out)
  return script_tracer.new({ registry = registry(), script = "spec", set_verdict = function() end },
    function(stream, list)
      out[#out + 1] = { stream, #list }
    end)
end

describe("script_tracer flush", function()
  it("hands one batch per stream with items, connection events first", function()
    for _, order in ipairs({ { "http", "connection" }, { "connection", "http" } }) do
      local out = {}
      local t = tracer_delivering_to(out)
      t:queue(order[1], {})
      t:queue(order[2], {})
      t:queue(order[1], {})
      t:flush()
      local count = { [order[1]] = 2, [order[2]] = 1 }
      assert.same({ { "connection", count.connection }, { "http", count.http } }, out)
      t:flush()
      assert.equal(2, #out)
      t:queue("http", {})
      t:flush()
      assert.same({ "http", 1 }, out[3])
    end
  end)
end)

describe("script_tracer reusing exchanges", function()
  after_each(function()
    exchange.reuse(false)
  end)

  it("gives a batch's exchanges back to the pool once the handlers returned, and empties the list", function()
    exchange.reuse()
    local seen = {}
    local t = script_tracer.new({ registry = registry(), script = "spec", set_verdict = function() end },
      function(stream, list)
        seen[#seen + 1] = { stream, #list, list[1].method }
      end)
    local ex = exchange.new("http")
    ex.method = "GET"
    t:queue("http", ex)
    t:flush()
    assert.same({ { "http", 1, "GET" } }, seen)
    local again = exchange.new("http")
    assert.equal(ex, again)
    assert.same({ false, 0 }, { again.method, again.status })
    assert.is_nil(t.out.http[1])
  end)

  it("keeps pooled no more exchanges than one flush of the last second gave back", function()
    exchange.reuse()
    exchange.trim(0)
    local t = script_tracer.new({ registry = registry(), script = "spec", set_verdict = function() end },
      function() end)
    local batch = {}
    for i = 1, 3 do
      batch[i] = exchange.new("http")
      t:queue("http", batch[i])
    end
    t:flush()
    t:queue("http", exchange.new("http"))
    t:flush()
    t:tick(1e9)
    -- three pooled: the first flush gave back three (the second took one and gave it back)
    local again = { exchange.new("http"), exchange.new("http"), exchange.new("http"), exchange.new("http") }
    local pooled = 0
    for _, ex in ipairs(again) do
      for _, b in ipairs(batch) do
        pooled = pooled + (ex == b and 1 or 0)
      end
    end
    assert.equal(3, pooled)
    for _, ex in ipairs(again) do
      exchange.release(ex)
    end
    t:tick(2e9)
    assert.is_false(exchange.new("http") == again[1] or exchange.new("http") == again[2])
  end)

  it("leaves the exchanges and lists to the script that does not reuse them", function()
    local kept
    local t = script_tracer.new({ registry = registry(), script = "spec", set_verdict = function() end },
      function(_, list)
        kept = list
      end)
    local ex = exchange.new("http")
    ex.method = "GET"
    t:queue("http", ex)
    t:flush()
    assert.same({ "GET", false }, { kept[1].method, exchange.new("http") == ex })
  end)

  it("copies an exchange into a plain table a handler may keep", function()
    local ex = exchange.parsed(exchange.new("http"))
    ex.method, ex.status = "GET", 200
    local c = exchange.copy(ex)
    exchange.release(ex)
    assert.same({ "GET", 200, "http" }, { c.method, c.status, c.protocol })
  end)
end)
