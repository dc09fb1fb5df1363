-- Specs for net/script_tracer.lua, the network tracer inside an agent
-- script: how it hands what the tracer completed to the script.
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
