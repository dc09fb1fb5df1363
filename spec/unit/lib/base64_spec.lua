-- base64_spec.lua - base64 text decoded as RFC 4648 gives it, with or
-- without padding and across line breaks; bad text is a message.
local base64 = require("moonrover.lib.base64")

describe("base64.decode", function()
  it("decodes RFC 4648's examples, padded or not", function()
    local cases = { [""] = "", Zg = "f", ["Zg=="] = "f", ["Zm8="] = "fo", Zm9v = "foo", ["Zm9vYg=="] = "foob",
      ["Zm9vYmE="] = "fooba", Zm9vYmFy = "foobar" }
    for text, want in pairs(cases) do
      assert.equal(want, base64.decode(text), text)
    end
  end)

  it("ignores whitespace and line breaks, and decodes every byte value", function()
    assert.equal("foobar", base64.decode("Zm9v\nYmFy\n"))
    assert.equal("\0\255\128+/", base64.decode(" AP+AKy8= "))
  end)

  it("says why text is not base64", function()
    assert.same({ nil, 'not base64: "!"' }, { base64.decode("Zm9!") })
    assert.same({ nil, "base64 text of a length no encoding has" }, { base64.decode("Zm9vY") })
  end)
end)
