-- text_escape.lua - makes bytes from the wire safe to print on a terminal or
-- in a log: control bytes (C0, DEL and the C1 range, which terminals read as
-- commands), bytes that are not valid UTF-8 and the backslash itself are
-- written as \xNN (the backslash as \\), so that a request cannot move the
-- cursor, retitle a window or hide a line, and what is shown reads back
-- unambiguously. Valid printable UTF-8 passes as it is. Pure.
local _M = {}

local byte, char, format = string.byte, string.char, string.format

local function hex(b)
  return format("\\x%02x", b)
end

-- The length of the valid UTF-8 sequence of printable characters starting
-- at s[i] (lead byte b >= 0x80), or nil when it is not one.
local function utf8_length(s, i, b)
  local n, min
  if b >= 0xc2 and b <= 0xdf then
    n, min = 2, 0x80
  elseif b >= 0xe0 and b <= 0xef then
    n, min = 3, 0x800
  elseif b >= 0xf0 and b <= 0xf4 then
    n, min = 4, 0x10000
  else
    return nil
  end
  local cp = b % (2 ^ (7 - n))
  for k = 1, n - 1 do
    local c = byte(s, i + k)
    if not c or c < 0x80 or c > 0xbf then
      return nil
    end
    cp = cp * 64 + (c - 0x80)
  end
  if cp < min or cp > 0x10ffff or (cp >= 0xd800 and cp <= 0xdfff) or cp <= 0x9f then
    return nil
  end
  return n
end

local function escape_all(s)
  local out, i, len = {}, 1, #s
  while i <= len do
    local b = byte(s, i)
    if b < 0x20 or b == 0x7f then
      out[#out + 1] = hex(b)
      i = i + 1
    elseif b == 0x5c then
      out[#out + 1] = "\\\\"
      i = i + 1
    elseif b < 0x80 then
      out[#out + 1] = char(b)
      i = i + 1
    else
      local n = utf8_length(s, i, b)
      out[#out + 1] = n and s:sub(i, i + n - 1) or hex(b)
      i = i + (n or 1)
    end
  end
  return table.concat(out)
end

-- s with every unsafe byte escaped; s itself when it has none.
function _M.printable(s)
  if not s:find("[%c\\\128-\255]") then
    return s
  end
  return escape_all(s)
end

return _M
