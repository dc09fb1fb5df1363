-- json_text_spec.lua - JSON text with escaped strings and ordered keys.
local json_text = require("moonrover.lib.json_text")

describe("json_text", function()
  it("escapes quotes, backslashes and control characters", function()
    assert.equal([["a\"b\\c\n\t\u0001"]], json_text.string('a"b\\c\n\t\1'))
  end)

  it("writes numbers as JSON has them: no trailing dot, no NaN", function()
    assert.equal("3", json_text.number(3))
    assert.equal("0.3", json_text.number(0.1 + 0.2))
    assert.equal("-2.25", json_text.number(-2.25))
    assert.equal("100000000000000000000", json_text.number(1e20))
    assert.equal("null", json_text.number(0 / 0))
    assert.equal("null", json_text.number(math.huge))
  end)

  it("keeps the keys in the order given and leaves out nil fields", function()
    assert.equal('{"b":true,"a":"x","c":1}', json_text.object({ "b", "a", "d", "c" }, { a = "x", b = true, c = 1 }))
  end)
end)
