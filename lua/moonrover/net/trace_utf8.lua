-- trace_utf8.lua - makes the strings `moonrover trace --format json` writes
-- valid UTF-8: what came off the wire (a target, a Host, a process name) may
-- hold any byte, and a JSON text must be UTF-8 (RFC 8259). Each byte that
-- does not belong to a well-formed UTF-8 sequence (RFC 3629: no overlong
-- forms, no surrogates, nothing past U+10FFFF) becomes U+FFFD, the
-- replacement character, as a decoder would show it; valid sequences are
-- kept as they are.
local _M = {}

local byte, concat = string.byte, table.concat

local REPLACEMENT = "\239\191\189" -- U+FFFD in UTF-8

-- The length of the well-formed sequence at s[i] (its first byte c), or 0.
local function sequence(s, i, c)
  local n, lo, hi
  if c >= 0xc2 and c <= 0xdf then
    n, lo, hi = 2, 0x80, 0xbf
  elseif c >= 0xe0 and c <= 0xef then
    n = 3
    lo = c == 0xe0 and 0xa0 or 0x80
    hi = c == 0xed and 0x9f or 0xbf
  elseif c >= 0xf0 and c <= 0xf4 then
    n = 4
    lo = c == 0xf0 and 0x90 or 0x80
    hi = c == 0xf4 and 0x8f or 0xbf
  else
    return 0
  end
  local b = byte(s, i + 1)
  if not b or b < lo or b > hi then
    return 0
  end
  for k = i + 2, i + n - 1 do
    b = byte(s, k)
    if not b or b < 0x80 or b > 0xbf then
      return 0
    end
  end
  return n
end

-- s with every byte outside a well-formed sequence replaced (s itself when
-- it is all ASCII or valid).
function _M.valid(s)
  if not s:find("[\128-\255]") then
    return s
  end
  local parts, n, from, i, len, changed = {}, 0, 1, 1, #s, false
  while i <= len do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local k = sequence(s, i, c)
      if k > 0 then
        i = i + k
      else
        parts[n + 1], parts[n + 2] = s:sub(from, i - 1), REPLACEMENT
        n, changed = n + 2, true
        i = i + 1
        from = i
      end
    end
  end
  if not changed then
    return s
  end
  parts[n + 1] = s:sub(from)
  return concat(parts)
end

_M.REPLACEMENT = REPLACEMENT

return _M
