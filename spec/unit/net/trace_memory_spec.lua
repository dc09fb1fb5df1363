-- trace_memory_spec.lua - trace collects its garbage fully only in a quiet
-- second after the heap grew: never while records pour in, never for a
-- small heap, never again for a heap that did not grow since (a fake
-- collector counts).
local trace_memory = require("moonrover.net.trace_memory")

local MIB = 1024

local function fake(kb)
  local gc = { kb = kb, collections = 0, live = 10 * MIB }
  gc.count = function() return gc.kb end
  gc.collect = function()
    gc.collections = gc.collections + 1
    gc.kb = gc.live
  end
  return gc
end

describe("trace memory", function()
  it("collects a grown heap in a quiet second, not in a busy one", function()
    local gc = fake(80 * MIB)
    local m = trace_memory.new(gc)
    assert.is_false(m:second(50000))
    assert.equal(0, gc.collections)
    assert.is_true(m:second(10))
    assert.same({ 1, 10 * MIB }, { gc.collections, gc.kb })
  end)

  it("leaves a small heap alone", function()
    local gc = fake(20 * MIB)
    assert.is_false(trace_memory.new(gc):second(0))
    assert.equal(0, gc.collections)
  end)

  it("collects again only once the heap grew by half of what was left", function()
    local gc = fake(80 * MIB)
    gc.live = 40 * MIB
    local m = trace_memory.new(gc)
    assert.is_true(m:second(0))
    gc.kb = 55 * MIB
    assert.is_false(m:second(0))
    gc.kb = 61 * MIB
    assert.is_true(m:second(0))
    assert.equal(2, gc.collections)
  end)

  it("runs the Lua collector by default", function()
    collectgarbage("stop")
    local piece, held = ("x"):rep(65536), {}
    for i = 1, 600 do
      held[i] = piece .. i
    end
    assert.equal(600, #held)
    held = nil
    local before = collectgarbage("count")
    assert.is_nil(held)
    local collected = trace_memory.new():second(0)
    collectgarbage("restart")
    assert.is_true(before > 32 * MIB, before)
    assert.is_true(collected)
    assert.is_true(collectgarbage("count") < before - 30 * MIB)
  end)
end)
