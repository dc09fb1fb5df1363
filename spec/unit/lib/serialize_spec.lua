-- Specs for the state hand-over serializer.
local serialize = require("moonrover.lib.serialize")

describe("serialize", function()
  it("round-trips nested plain data", function()
    local value = {
      count = 42, ratio = 0.1, big = 2 ^ 60, neg = -7, flag = true, off = false,
      name = "quote \" backslash \\ newline \n nul \0 end",
      list = { 1, 2, { deep = "x" } },
      [10] = "number key", [1.5] = "float key",
    }
    assert.same(value, assert(serialize.decode(serialize.encode(value))))
  end)

  it("round-trips state too large for one Lua function's constants", function()
    local conns = {}
    for i = 1, 70000 do
      conns[i] = { id = i * 7 + 0.5, name = "c" .. i, bytes = { i, i + 1 } }
    end
    local back = assert(serialize.decode(serialize.encode({ conns = conns, n = 70000 })))
    assert.same(70000, back.n)
    assert.same(conns, back.conns)
  end)

  it("keeps infinities and NaN", function()
    local back = assert(serialize.decode(serialize.encode({ inf = math.huge, ninf = -math.huge, nan = 0 / 0 })))
    assert.same(math.huge, back.inf)
    assert.same(-math.huge, back.ninf)
    assert.is_true(back.nan ~= back.nan)
  end)

  it("encodes scalars and nil", function()
    assert.same(5, serialize.decode(serialize.encode(5)))
    assert.same("s", serialize.decode(serialize.encode("s")))
    assert.is_nil(serialize.decode(serialize.encode(nil)))
  end)

  it("refuses functions, userdata and cycles", function()
    assert.has_error(function() serialize.encode({ f = print }) end,
      "cannot serialize a function (only nil, booleans, numbers, strings and tables)")
    local t = {}
    t.self = t
    assert.has_error(function() serialize.encode(t) end, "cannot serialize a table that contains itself")
  end)

  it("decodes only data: no access to globals", function()
    local v, err = serialize.decode("os.exit(1)")
    assert.is_nil(v)
    assert.is_string(err)
  end)
end)
