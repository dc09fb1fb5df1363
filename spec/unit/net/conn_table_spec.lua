-- conn_table_spec.lua - the tracer's connection table: ids find their slot
-- through its open-addressing hash while connections come and go, the
-- table full (each new one taking the place of one gone), with ids that
-- share their low bits (colliding buckets) and ids past 2^32.
local conn_table = require("moonrover.net.conn_table")

describe("the tracer's connection table", function()
  it("finds every connection by id, and none gone, while the full table turns over", function()
    local max = 1024
    local t = conn_table.new(max)
    local open, order = {}, {}
    local function id_of(k)
      return (k % 2 == 0) and k * 65536 or 2 ^ 40 + k
    end
    for k = 1, max do
      open[id_of(k)] = t:add(id_of(k), k)
      order[k] = id_of(k)
    end
    math.randomseed(7)
    for k = max + 1, 20 * max do
      local at = math.random(#order)
      local gone = order[at]
      t:remove(open[gone])
      open[gone] = nil
      assert.is_nil(t:get(gone))
      assert.is_false(t:full())
      open[id_of(k)] = t:add(id_of(k), k)
      order[at] = id_of(k)
    end
    local found = 0
    for id, slot in pairs(open) do
      assert.equal(slot, t:get(id))
      found = found + 1
    end
    local each = 0
    for slot, id in t:each() do
      assert.equal(slot, open[id])
      each = each + 1
    end
    assert.same({ max, max, max }, { found, each, t.count })
    assert.is_nil(t:get(id_of(1)))
  end)
end)
