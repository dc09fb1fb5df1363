-- net_trace_order_spec.lua - trace's lines written in time order per flush.
local trace_order = require("moonrover.net.trace_order")

describe("trace order", function()
  it("writes a flush's lines sorted by start time, ties in arrival order", function()
    local written = {}
    local order = trace_order.new(function(text) written[#written + 1] = text end)
    order:add(300, "c\n")
    order:add(100, "a\n")
    order:add(200, "b1\n")
    order:add(200, "b2\n")
    order:flush()
    assert.same({ "a\nb1\nb2\nc\n" }, written)
  end)

  it("writes nothing when nothing is held, and each line once", function()
    local written = {}
    local order = trace_order.new(function(text) written[#written + 1] = text end)
    order:flush()
    order:add(5, "x\n")
    order:flush()
    order:flush()
    order:add(1, "y\n")
    order:flush()
    assert.same({ "x\n", "y\n" }, written)
  end)
end)
