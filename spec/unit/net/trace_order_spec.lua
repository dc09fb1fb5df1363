-- net_trace_order_spec.lua - trace's lines written in time order per flush.
local ffi = require("ffi")
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

  it("sorts starts that span hours, and lines written in place", function()
    local written = {}
    local order = trace_order.new(function(text) written[#written + 1] = text end)
    order:add(7200e9, "late\n")
    local buf, at = order:room(16)
    ffi.copy(buf + at, "early\n", 6)
    order:commit(1, at + 6)
    order:add(7200e9, "late2\n")
    order:flush()
    assert.same({ "early\nlate\nlate2\n" }, written)
  end)

  it("writes the lines held at once when the next would take them past what it holds", function()
    local written = {}
    local order = trace_order.new(function(text) written[#written + 1] = text end, 12)
    order:add(3, "c\n")
    order:add(1, "a\n")
    order:add(2, "b\n")
    order:add(5, "e\n")
    order:add(4, "d\n")
    order:add(0, "0\n")
    order:add(6, "fff\n")
    assert.same({ "0\na\nb\nc\nd\ne\n" }, written)
    order:flush()
    assert.same({ "0\na\nb\nc\nd\ne\n", "fff\n" }, written)
  end)

  it("writes a large flush in pieces, all its lines in order", function()
    local written = {}
    local order = trace_order.new(function(text) written[#written + 1] = text end)
    local want = {}
    for k = 1, 40000 do
      want[k] = string.format("%08d", k) .. ("x"):rep(60) .. "\n"
    end
    for k = 40000, 1, -1 do
      order:add(k * 1000, want[k])
    end
    order:flush()
    assert.is_true(#written > 1)
    assert.equal(table.concat(want), table.concat(written))
  end)
end)
