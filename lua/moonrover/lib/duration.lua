-- duration.lua - reads the durations people type on a command line: a bare
-- number is seconds ("10", "0.5"), or a number with a unit: "250ms", "5s",
-- "2m", "1h" (also "us" for microseconds). Pure.
local _M = {}

local UNIT_SECONDS = { us = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600 }

-- Returns the duration in seconds, or nil and a message naming the text.
function _M.seconds(text)
  if type(text) == "number" then
    return text >= 0 and text or nil, "a duration cannot be negative"
  end
  local number, unit = tostring(text):lower():match("^%s*([%d%.]+)%s*(%a*)%s*$")
  local value = tonumber(number)
  if not value then
    return nil, "'" .. tostring(text) .. "' is not a duration (e.g. 10, 5s, 2m, 250ms)"
  end
  local scale = UNIT_SECONDS[unit == "" and "s" or unit]
  if not scale then
    return nil, "'" .. tostring(text) .. "' has an unknown unit '" .. unit .. "' (us, ms, s, m, h)"
  end
  return value * scale
end

return _M
