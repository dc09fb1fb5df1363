-- json_decode.lua - reads JSON text (RFC 8259) into Lua values: objects as
-- tables keyed by name, arrays as lists, null as nil (a null array element
-- leaves a hole), numbers as Lua numbers. For the small documents OAP sends
-- inside command arguments (a NETWORK task's ExtensionConfigJSON, continuous
-- profiling's ServiceWithPolicyJSON); written here because agent scripts
-- load no C modules. Bad text is an error message, never a raise.
local _M = {}

local byte, sub, char = string.byte, string.sub, string.char

local ESCAPED = { [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f", [110] = "\n", [114] = "\r",
  [116] = "\t" }
local MAX_DEPTH = 64

local value -- (s, i, depth) -> v, next index; below

local function fail(i, what)
  error({ msg = string.format("%s at character %d", what, i) }, 0)
end

local function skip(s, i)
  return (s:find("[^ \t\r\n]", i)) or #s + 1
end

local function utf8(code)
  if code < 0x80 then
    return char(code)
  elseif code < 0x800 then
    return char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
  elseif code < 0x10000 then
    return char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
  end
  return char(0xF0 + math.floor(code / 262144), 0x80 + math.floor(code / 4096) % 64,
    0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
end

local function unicode_escape(s, i)
  local hex = s:match("^%x%x%x%x", i)
  if not hex then
    fail(i, "bad \\u escape")
  end
  local code = tonumber(hex, 16)
  if code >= 0xD800 and code < 0xDC00 then
    local low = s:match("^\\u(%x%x%x%x)", i + 4)
    local lo = low and tonumber(low, 16)
    if lo and lo >= 0xDC00 and lo < 0xE000 then
      return utf8(0x10000 + (code - 0xD800) * 1024 + (lo - 0xDC00)), i + 10
    end
  end
  return utf8(code), i + 4
end

local function string_at(s, i)
  local out, from = {}, i + 1
  while true do
    local j = s:find('["\\%z\1-\31]', from) -- DEL (127) may stand unescaped
    if not j then
      fail(i, "unterminated string")
    end
    out[#out + 1] = sub(s, from, j - 1)
    local c = byte(s, j)
    if c == 34 then
      return table.concat(out), j + 1
    elseif c ~= 92 then
      fail(j, "control character in string")
    end
    local e = byte(s, j + 1)
    if e == 117 then
      out[#out + 1], from = unicode_escape(s, j + 2)
    elseif ESCAPED[e] then
      out[#out + 1], from = ESCAPED[e], j + 2
    else
      fail(j, "bad escape")
    end
  end
end

local function number_at(s, i)
  local text = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  local n = text and tonumber(text)
  if not n or text:find("^-?0%d") then
    fail(i, "bad number")
  end
  return n, i + #text
end

-- The items of the array or object whose opener is at i, up to the byte
-- close: read(s, i, depth, out, n) reads the nth, stores it in out and
-- returns the index after it. Returns out and the index past close.
local function items_at(s, i, depth, close, expected, read)
  local out, n = {}, 0
  i = skip(s, i + 1)
  if byte(s, i) == close then
    return out, i + 1
  end
  while true do
    n = n + 1
    i = skip(s, read(s, i, depth, out, n))
    local c = byte(s, i)
    if c == close then
      return out, i + 1
    elseif c ~= 44 then
      fail(i, expected)
    end
    i = skip(s, i + 1)
  end
end

local function array_item(s, i, depth, out, n)
  local v
  v, i = value(s, i, depth)
  out[n] = v
  return i
end

local function object_member(s, i, depth, out)
  if byte(s, i) ~= 34 then
    fail(i, "expected a name")
  end
  local k, v
  k, i = string_at(s, i)
  i = skip(s, i)
  if byte(s, i) ~= 58 then
    fail(i, "expected ':'")
  end
  v, i = value(s, skip(s, i + 1), depth)
  out[k] = v
  return i
end

local WORDS = { { "true", true }, { "false", false }, { "null", nil } }

value = function(s, i, depth)
  if depth > MAX_DEPTH then
    fail(i, "nested deeper than " .. MAX_DEPTH)
  end
  local c = byte(s, i)
  if c == 123 then
    return items_at(s, i, depth + 1, 125, "expected ',' or '}'", object_member)
  elseif c == 91 then
    return items_at(s, i, depth + 1, 93, "expected ',' or ']'", array_item)
  elseif c == 34 then
    return string_at(s, i)
  elseif c == 45 or (c and c >= 48 and c <= 57) then
    return number_at(s, i)
  end
  for _, w in ipairs(WORDS) do
    if sub(s, i, i + #w[1] - 1) == w[1] then
      return w[2], i + #w[1]
    end
  end
  fail(i, c and "unexpected character" or "unexpected end")
end

-- The value of the JSON text s, or nil and why ("bad escape at character 12").
function _M.decode(s)
  if type(s) ~= "string" then
    return nil, "not a string"
  end
  local ok, v, i = pcall(value, s, skip(s, 1), 0)
  if not ok then
    return nil, type(v) == "table" and v.msg or tostring(v)
  end
  if skip(s, i) <= #s then
    return nil, string.format("text after the value at character %d", skip(s, i))
  end
  return v
end

return _M
