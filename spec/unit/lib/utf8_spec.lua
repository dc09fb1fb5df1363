-- utf8_spec.lua - the shared UTF-8 validator: well-formed sequences have
-- their length, overlongs, surrogates, cut sequences and stray bytes none.
local utf8 = require("moonrover.lib.utf8")

describe("utf8.length", function()
  it("gives the length of 2, 3 and 4 byte sequences", function()
    assert.equal(2, utf8.length("\xc3\xa9", 1))
    assert.equal(3, utf8.length("x\xe2\x82\xac", 2))
    assert.equal(4, utf8.length("\xf0\x9f\x98\x80", 1))
  end)

  it("refuses overlongs, surrogates, code points above U+10FFFF and cut or stray bytes", function()
    for _, s in ipairs({ "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
      "\xe2\x82", "\x80" }) do
      assert.is_nil(utf8.length(s, 1), s)
    end
  end)
end)
