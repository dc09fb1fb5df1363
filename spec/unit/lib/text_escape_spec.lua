-- text_escape_spec.lua - what trace's text lines and the agent's log lines
-- print of bytes from the wire: terminal controls and invalid UTF-8 escaped.
local text_escape = require("moonrover.lib.text_escape")

local printable = text_escape.printable

describe("text_escape.printable", function()
  it("passes printable ASCII and valid UTF-8 as they are", function()
    assert.equal("/index.html?q=a b", printable("/index.html?q=a b"))
    assert.equal("/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80", printable("/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80"))
  end)

  it("escapes an OSC title sequence, a bare CR, LF, tab, NUL and DEL", function()
    assert.equal("/\\x1b]0;X\\x07", printable("/\27]0;X\7"))
    assert.equal("/a\\x0dfake line", printable("/a\rfake line"))
    assert.equal("\\x0a\\x09\\x00\\x7f", printable("\n\t\0\127"))
  end)

  it("escapes the backslash so that what is shown reads back unambiguously", function()
    assert.equal("/\\\\x1b", printable("/\\x1b"))
  end)

  it("escapes C1 controls even when validly encoded (a terminal takes U+009B for CSI)", function()
    assert.equal("\\xc2\\x9b2J", printable("\xc2\x9b2J"))
    assert.equal("\xc2\xa0", printable("\xc2\xa0"))
  end)

  it("escapes bytes that are not UTF-8: stray continuations, overlongs, surrogates, cut sequences", function()
    assert.equal("\\x80a", printable("\x80a"))
    assert.equal("\\xc0\\xaf", printable("\xc0\xaf"))
    assert.equal("\\xe0\\x80\\xaf", printable("\xe0\x80\xaf"))
    assert.equal("\\xed\\xa0\\x80", printable("\xed\xa0\x80"))
    assert.equal("x\\xe2\\x82", printable("x\xe2\x82"))
    assert.equal("\\xf5\\x80\\x80\\x80", printable("\xf5\x80\x80\x80"))
  end)
end)
