-- json_text.lua - JSON text for the objects moonrover writes itself (the
-- `trace --format json` lines): strings escaped as RFC 8259 says, numbers,
-- booleans, and objects whose keys keep the order given, so that every line
-- of a stream reads the same. Written here rather than taken from lua-cjson
-- because agent scripts load no C modules, and cjson orders keys by hash.
local _M = {}

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r",
  ["\t"] = "\\t" }

local function escape_char(c)
  return ESCAPES[c] or string.format("\\u%04x", c:byte())
end

-- A JSON string literal of s (bytes that are not valid UTF-8 are passed as
-- they are: the caller's strings come from the wire and are shown as seen).
function _M.string(s)
  if not s:find('[%c"\\]') then
    return '"' .. s .. '"'
  end
  return '"' .. s:gsub('[%c"\\]', escape_char) .. '"'
end

-- A JSON number of n: integers without a fraction, others with up to 6
-- decimals; NaN and infinities (not JSON) as null.
function _M.number(n)
  if n ~= n or n == math.huge or n == -math.huge then
    return "null"
  end
  if n == math.floor(n) and math.abs(n) < 2 ^ 53 then
    return string.format("%d", n)
  end
  return (string.format("%.6f", n):gsub("0+$", ""):gsub("%.$", ""))
end

local function value(v)
  local t = type(v)
  if t == "string" then
    return _M.string(v)
  elseif t == "number" then
    return _M.number(v)
  elseif t == "boolean" then
    return v and "true" or "false"
  end
  return "null"
end

-- Each key written once as `"key":` (keys come from the code's few lists).
local KEY_TEXT = setmetatable({}, {
  __index = function(t, k)
    local text = _M.string(k) .. ":"
    t[k] = text
    return text
  end,
})

-- An object of the fields named in keys, in that order; a field whose value
-- is nil is left out.
function _M.object(keys, t)
  local parts, n = {}, 0
  for i = 1, #keys do
    local k = keys[i]
    local v = t[k]
    if v ~= nil then
      n = n + 1
      parts[n] = KEY_TEXT[k] .. value(v)
    end
  end
  return "{" .. table.concat(parts, ",", 1, n) .. "}"
end

return _M
