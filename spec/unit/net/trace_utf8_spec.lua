-- trace_utf8_spec.lua - strings made valid UTF-8 for `trace --format json`:
-- well-formed sequences kept, every other byte U+FFFD.
local trace_utf8 = require("moonrover.net.trace_utf8")

local R = trace_utf8.REPLACEMENT

-- Whether s is well-formed UTF-8, decoded here independently: each code
-- point by its first byte's length, then checked against its shortest form,
-- the surrogates and U+10FFFF.
local function well_formed(s)
  local i = 1
  while i <= #s do
    local c = s:byte(i)
    local n, cp = 1, c
    if c >= 0xf0 then
      n, cp = 4, c - 0xf0
    elseif c >= 0xe0 then
      n, cp = 3, c - 0xe0
    elseif c >= 0xc0 then
      n, cp = 2, c - 0xc0
    elseif c >= 0x80 then
      return false
    end
    if c >= 0xf8 then
      return false
    end
    for k = 1, n - 1 do
      local b = s:byte(i + k)
      if not b or b < 0x80 or b >= 0xc0 then
        return false
      end
      cp = cp * 64 + (b - 0x80)
    end
    local least = ({ 0, 0x80, 0x800, 0x10000 })[n]
    if cp < least or cp > 0x10ffff or (cp >= 0xd800 and cp <= 0xdfff) then
      return false
    end
    i = i + n
  end
  return true
end

describe("trace_utf8", function()
  it("keeps ASCII and valid UTF-8 as they are", function()
    for _, s in ipairs({ "", "/a?b=c", "/caf\195\169", "\226\130\172", "\240\159\152\128", "\244\143\191\191" }) do
      assert.equal(s, trace_utf8.valid(s))
    end
  end)

  it("replaces each byte outside a well-formed sequence", function()
    assert.equal("/" .. R .. R .. R, trace_utf8.valid("/\255\254\128"))
    assert.equal("a" .. R .. "b", trace_utf8.valid("a\195b"))                -- a lead byte without its follower
    assert.equal(R .. R, trace_utf8.valid("\192\175"))                       -- overlong '/'
    assert.equal(R .. R .. R, trace_utf8.valid("\237\160\128"))              -- a surrogate
    assert.equal(R .. R .. R .. R, trace_utf8.valid("\244\144\128\128"))     -- past U+10FFFF
    assert.equal("\195\169" .. R .. R, trace_utf8.valid("\195\169\226\130")) -- a sequence cut at the end
  end)

  it("always gives well-formed UTF-8 that keeps every valid sequence (random bytes)", function()
    math.randomseed(21)
    for _ = 1, 20000 do
      local b = {}
      for k = 1, math.random(0, 12) do
        b[k] = string.char(math.random() < 0.5 and math.random(0x80, 0xff) or math.random(0, 0x7f))
      end
      local s = table.concat(b)
      local out = trace_utf8.valid(s)
      assert.is_true(well_formed(out), ("%q"):format(s))
      assert.equal(well_formed(s), out == s)
    end
  end)
end)
