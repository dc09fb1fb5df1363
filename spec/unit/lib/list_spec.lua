-- Specs for lib/list.lua: taking one element out of an array in place.
local list = require("moonrover.lib.list")

describe("list.remove", function()
  it("takes out the first element equal to the item and keeps the others in order", function()
    local a, b = {}, {}
    local l = { "x", a, "y", a, b }
    list.remove(l, a)
    assert.same({ "x", "y", a, b }, l)
    assert.equal(a, l[3])
  end)

  it("leaves the list as it is when the item is not in it", function()
    local l = { 1, 2, 3 }
    list.remove(l, 4)
    assert.same({ 1, 2, 3 }, l)
    list.remove({}, 1)
  end)
end)
