-- Specs for lib/tables.lua.
local tables = require("moonrover.lib.tables")

describe("tables.sorted_keys", function()
  it("gives every key in order", function()
    assert.same({ "a", "b", "c" }, tables.sorted_keys({ c = 1, a = 2, b = 3 }))
    assert.same({ 1, 2, 3 }, tables.sorted_keys({ "x", "y", "z" }))
    assert.same({}, tables.sorted_keys({}))
  end)

  it("sorts by the order given", function()
    assert.same({ 3, 2, 1 }, tables.sorted_keys({ "x", "y", "z" }, function(a, b) return a > b end))
  end)

  it("keeps only string keys when asked", function()
    assert.same({ "k" }, tables.sorted_string_keys({ "x", k = true }))
  end)
end)
