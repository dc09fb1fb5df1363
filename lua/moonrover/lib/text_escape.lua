-- text_escape.lua - makes bytes from the wire safe to print on a terminal or
-- in a log: control bytes (C0, DEL and the C1 range, which terminals read as
-- commands), bytes that are not valid UTF-8 and the backslash itself are
-- written as \xNN (the backslash as \\), so that a request cannot move the
-- cursor, retitle a window or hide a line, and what is shown reads back
-- unambiguously. Valid printable UTF-8 passes as it is. Pure.
local utf8 = require("moonrover.lib.utf8")

local _M = {}

local byte, char, format = string.byte, string.char, string.format

local function hex(b)
  return format("\\x%02x", b)
end

-- The length of the valid UTF-8 sequence starting at s[i] (lead byte b >=
-- 0x80) when it is printable, or nil: U+0080..U+009F (0xc2 0x80..0x9f) are
-- the C1 controls.
local function printable_length(s, i, b)
  if b == 0xc2 and (byte(s, i + 1) or 0) <= 0x9f then
    return nil
  end
  return utf8.length(s, i)
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
      local n = printable_length(s, i, b)
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
