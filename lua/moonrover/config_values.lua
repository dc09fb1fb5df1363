-- config_values.lua - the text of a configuration value as Rover's viper +
-- mapstructure weak typing reads it (booleans, integers, Go durations,
-- go-units sizes, host:port), and values shown back in error messages.
-- Every parser takes the text and returns the value, or nil when the text is
-- not one.
local _M = {}

-- mapstructure decodes strings into bools with Go's strconv.ParseBool (1, t,
-- true, 0, f, false; here in any case) and "" as false
local BOOLS = { ["1"] = true, t = true, ["true"] = true, ["0"] = false, f = false, ["false"] = false,
  [""] = false }

function _M.bool(s)
  return BOOLS[s:lower()]
end

local INT_PREFIXES = { x = 16, X = 16, o = 8, O = 8, b = 2, B = 2 }

local INT_DIGITS = { [2] = "^[01_]+$", [8] = "^[0-7_]+$", [10] = "^[0-9_]+$", [16] = "^[%x_]+$" }

local LARGEST_EXACT = 2 ^ 53 - 1

-- Go's strconv.ParseInt(s, 0, 64) as mapstructure uses it: optional sign,
-- 0x / 0o / 0b prefixes, a leading 0 for octal, "_" between digits; "" is 0.
-- Integers beyond 2^53 are refused since a Lua number cannot hold them exactly.
function _M.int(s)
  if s == "" then
    return 0
  end
  local sign, body = s:match("^([+-]?)(.*)$")
  local base, digits = 10, body
  if body:sub(1, 1) == "0" and INT_PREFIXES[body:sub(2, 2)] then
    base, digits = INT_PREFIXES[body:sub(2, 2)], body:sub(3)
  elseif body:find("^0[0-9_]") then
    base, digits = 8, body:sub(2)
  end
  if not digits:find(INT_DIGITS[base]) or digits:find("__") or digits:find("_$")
    or (base == 10 and digits:find("^_")) then
    return nil
  end
  local n = tonumber((digits:gsub("_", "")), base)
  if not n or n > LARGEST_EXACT then
    return nil
  end
  return sign == "-" and -n or n
end

-- seconds per unit of Go's time.ParseDuration
local DURATION_UNITS = {
  ns = 1e-9, us = 1e-6, ["\194\181s"] = 1e-6, ["\206\188s"] = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600,
}

-- Go's time.ParseDuration: a sign, then numbers (fractions allowed) each with a
-- unit ("1m30s", "1.5s", "500us"); "0" alone needs no unit. Returns seconds.
function _M.duration(s)
  local sign, rest = s:match("^([+-]?)(.*)$")
  if rest == "0" then
    return 0
  elseif rest == "" then
    return nil
  end
  local total = 0
  while rest ~= "" do
    local number, unit, tail = rest:match("^([0-9]*%.?[0-9]*)([^0-9.]*)(.*)$")
    if number == "" or number == "." or not DURATION_UNITS[unit] then
      return nil
    end
    total = total + tonumber(number) * DURATION_UNITS[unit]
    rest = tail
  end
  return sign == "-" and -total or total
end

-- multipliers of docker/go-units RAMInBytes, which Rover uses for buffer
-- sizes: binary whatever the spelling, so KB = KiB = K = 1024 and MB = 1024^2
local SIZE_UNITS = { [""] = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3, t = 1024 ^ 4, p = 1024 ^ 5 }

-- RAMInBytes syntax: a number (with an optional fraction), one optional space,
-- then an optional unit letter, "i" and "b" ("400KB", "1MiB", "1.5 g", "512")
function _M.size(s)
  local number = s:match("^%d+%.%d+") or s:match("^%d+")
  if not number then
    return nil
  end
  local unit = s:sub(#number + 1):match("^ ?([kKmMgGtTpP]?)[iI]?[bB]?$")
  if not unit then
    return nil
  end
  return math.floor(tonumber(number) * SIZE_UNITS[unit:lower()])
end

-- "host:port" or "[ipv6]:port" as the runtime parses addresses (the port
-- from 0 to 65535, no spaces or slashes): host and port, or nil.
function _M.host_port(s)
  local host, port = s:match("^(.*):(%d+)$")
  port = tonumber(port)
  if not host or port > 65535 or s:find("[%s/]") then
    return nil
  end
  local inner = host:match("^%[(.*)%]$")
  if inner then
    host = inner
  elseif host:find("[:%[]") then
    return nil
  end
  if host == "" then
    return nil
  end
  return host, port
end

local SHOWN = 60 -- characters of a value a message shows

local ESCAPES = { ["\n"] = "\\n", ["\t"] = "\\t", ['"'] = '\\"', ["\\"] = "\\\\" }

local function quote(s)
  local shown = s:sub(1, SHOWN):gsub('[%c"\\]', function(c)
    return ESCAPES[c] or string.format("\\x%02x", c:byte())
  end)
  if #s > SHOWN then
    return string.format('"%s..." (%d bytes)', shown, #s)
  end
  return '"' .. shown .. '"'
end

-- A short picture of a value for messages: "text", [a, b], {k: v}.
local function picture(v, budget)
  if type(v) ~= "table" then
    return v == nil and "~" or tostring(v)
  end
  local parts, is_list = {}, getmetatable(v) ~= nil
  local keys = {}
  for k in pairs(v) do
    keys[#keys + 1] = k
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local item = picture(v[k], budget)
    parts[#parts + 1] = is_list and item or tostring(k) .. ": " .. item
  end
  local text = table.concat(parts, ", ")
  if #text > budget then
    text = text:sub(1, budget) .. "..."
  end
  return is_list and "[" .. text .. "]" or "{" .. text .. "}"
end

-- How a message shows a value: a quoted string (cut after 60 characters),
-- "a list [...]" / "a mapping {...}" (lists carry a metatable, see yaml.lua),
-- or "missing".
function _M.show(v)
  if type(v) == "string" then
    return quote(v)
  elseif type(v) == "table" then
    return (getmetatable(v) ~= nil and "a list " or "a mapping ") .. picture(v, SHOWN)
  end
  return v == nil and "missing" or tostring(v)
end

-- seconds as Go writes short durations: 1ms, 20s, 1m30s
function _M.show_duration(seconds)
  if seconds < 1 then
    return string.format("%gms", seconds * 1000)
  elseif seconds < 60 or seconds % 60 ~= 0 then
    return string.format("%gs", seconds)
  end
  return string.format("%gm", seconds / 60)
end

return _M
