-- utf8.lua - the one UTF-8 validator of the tree: the length of a well-formed
-- sequence at a position of a string (no overlong forms, no surrogates,
-- nothing above U+10FFFF), for the writers that pass valid UTF-8 through and
-- replace or escape the rest (lib/text_escape.lua, profiler/writers/svg.lua).
-- Pure.
local _M = {}

local byte = string.byte

-- How many continuation bytes a lead byte needs, and the range allowed for
-- the first of them (the range that excludes overlongs and surrogates).
local function first_cont_range(lead)
  if lead >= 0xC2 and lead <= 0xDF then return 1, 0x80, 0xBF end
  if lead == 0xE0 then return 2, 0xA0, 0xBF end
  if lead == 0xED then return 2, 0x80, 0x9F end
  if lead >= 0xE1 and lead <= 0xEF then return 2, 0x80, 0xBF end
  if lead == 0xF0 then return 3, 0x90, 0xBF end
  if lead >= 0xF1 and lead <= 0xF3 then return 3, 0x80, 0xBF end
  if lead == 0xF4 then return 3, 0x80, 0x8F end
  return nil
end

-- The length in bytes of the valid multi-byte sequence starting at s[i]
-- (its lead byte >= 0x80), or nil when there is none.
function _M.length(s, i)
  local lead = byte(s, i)
  local n, lo, hi = first_cont_range(lead or 0)
  if not n then return nil end
  local b = byte(s, i + 1)
  if not b or b < lo or b > hi then return nil end
  for j = i + 2, i + n do
    b = byte(s, j)
    if not b or b < 0x80 or b > 0xBF then return nil end
  end
  return n + 1
end

return _M
