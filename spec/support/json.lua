-- json.lua - a small JSON decoder (and encoder) for specs: reads the stand-in
-- OAP's JSON-lines record and writes its task file.
--
-- decode(text) returns the value, or nil and "message at byte N". Objects
-- become tables with string keys, arrays sequences (1-based), JSON null the
-- sentinel _M.null (so arrays keep their length), numbers Lua numbers;
-- strings are UTF-8, with \uXXXX escapes (surrogate pairs included) encoded.
-- encode(value) writes tables with a non-empty sequence part, or marked with
-- _M.array(t), as arrays and other tables as objects (keys sorted).
local _M = {}

_M.null = setmetatable({}, { __tostring = function() return "null" end })

local array_mark = setmetatable({}, { __mode = "k" })

-- Marks t to be encoded as a JSON array even when empty; returns t.
function _M.array(t)
  array_mark[t] = true
  return t
end

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function utf8_char(cp)
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

-- The decoder: each parse function takes the text and a position and returns
-- the value and the position after it, or raises {msg, pos}.
local function fail(msg, pos)
  error({ msg = msg, pos = pos }, 0)
end

local function skip_space(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local function hex4(s, i)
  local h = s:match("^%x%x%x%x", i)
  if not h then
    fail("bad \\u escape", i - 2)
  end
  return tonumber(h, 16)
end

-- A \u escape starting at the "u" (position i); returns the UTF-8 text and
-- the position after the escape (and after its low surrogate, if any).
local function unicode_escape(s, i)
  local cp = hex4(s, i + 1)
  if cp >= 0xD800 and cp <= 0xDBFF and s:sub(i + 5, i + 6) == "\\u" then
    local low = hex4(s, i + 7)
    if low >= 0xDC00 and low <= 0xDFFF then
      return utf8_char(0x10000 + (cp - 0xD800) * 0x400 + (low - 0xDC00)), i + 11
    end
  end
  return utf8_char(cp), i + 5
end

local function parse_string(s, i)
  local parts, j = {}, i + 1
  while true do
    local k = s:find('["\\%c]', j)
    if not k then
      fail("unterminated string", i)
    end
    parts[#parts + 1] = s:sub(j, k - 1)
    local c = s:sub(k, k)
    if c == '"' then
      return table.concat(parts), k + 1
    elseif c ~= "\\" then
      fail("control character in string", k)
    end
    local e = s:sub(k + 1, k + 1)
    if e == "u" then
      parts[#parts + 1], j = unicode_escape(s, k + 1)
    elseif ESCAPES[e] then
      parts[#parts + 1], j = ESCAPES[e], k + 2
    else
      fail("bad escape", k)
    end
  end
end

local function parse_number(s, i)
  local text = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  local n = text and text:match("^-?0%d") == nil and tonumber(text)
  if not n then
    fail("bad number", i)
  end
  return n, i + #text
end

local parse_value

local function parse_array(s, i)
  local out, n = {}, 0
  i = skip_space(s, i + 1)
  if s:sub(i, i) == "]" then
    return out, i + 1
  end
  while true do
    n = n + 1
    out[n], i = parse_value(s, i)
    i = skip_space(s, i)
    local c = s:sub(i, i)
    if c == "]" then
      return out, i + 1
    elseif c ~= "," then
      fail("expected ',' or ']'", i)
    end
    i = i + 1
  end
end

local function parse_object(s, i)
  local out = {}
  i = skip_space(s, i + 1)
  if s:sub(i, i) == "}" then
    return out, i + 1
  end
  while true do
    i = skip_space(s, i)
    if s:sub(i, i) ~= '"' then
      fail("expected a string key", i)
    end
    local key
    key, i = parse_string(s, i)
    i = skip_space(s, i)
    if s:sub(i, i) ~= ":" then
      fail("expected ':'", i)
    end
    out[key], i = parse_value(s, i + 1)
    i = skip_space(s, i)
    local c = s:sub(i, i)
    if c == "}" then
      return out, i + 1
    elseif c ~= "," then
      fail("expected ',' or '}'", i)
    end
    i = i + 1
  end
end

local LITERALS = { ["true"] = true, ["false"] = false, null = _M.null }

function parse_value(s, i)
  i = skip_space(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    return parse_object(s, i)
  elseif c == "[" then
    return parse_array(s, i)
  elseif c == '"' then
    return parse_string(s, i)
  elseif c == "-" or c:match("%d") then
    return parse_number(s, i)
  end
  local word = s:match("^%a+", i)
  if word and LITERALS[word] ~= nil then
    return LITERALS[word], i + #word
  end
  fail("unexpected " .. (c == "" and "end of text" or "'" .. c .. "'"), i)
end

function _M.decode(text)
  local ok, value, i = pcall(parse_value, text, 1)
  if not ok then
    if type(value) ~= "table" then
      error(value, 0)
    end
    return nil, value.msg .. " at byte " .. value.pos
  end
  i = skip_space(text, i)
  if i <= #text then
    return nil, "trailing text at byte " .. i
  end
  return value
end

-- The encoder.
local SHORT_ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return SHORT_ESCAPES[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function encode_number(n)
  if n ~= n or n == math.huge or n == -math.huge then
    error("json: cannot encode " .. tostring(n))
  end
  if n == math.floor(n) and math.abs(n) < 2 ^ 53 then
    return string.format("%d", n)
  end
  return string.format("%.17g", n)
end

local encode

local function encode_table(t)
  local parts = {}
  if #t > 0 or array_mark[t] then
    for i = 1, #t do
      parts[i] = encode(t[i])
    end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(t) do
    if type(k) ~= "string" then
      error("json: object keys must be strings, not " .. type(k))
    end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for i, k in ipairs(keys) do
    parts[i] = encode_string(k) .. ":" .. encode(t[k])
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

function encode(v)
  local kind = type(v)
  if v == _M.null then
    return "null"
  elseif kind == "table" then
    return encode_table(v)
  elseif kind == "string" then
    return encode_string(v)
  elseif kind == "number" then
    return encode_number(v)
  elseif kind == "boolean" then
    return tostring(v)
  end
  error("json: cannot encode a " .. kind)
end
_M.encode = encode

return _M
