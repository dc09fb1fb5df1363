-- json_lines.lua - reads the lines `moonrover trace --format json` writes:
-- one flat JSON object per line (string, number, boolean and null values;
-- no nested objects or arrays), into Lua tables; null is left out.
local _M = {}

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function read_string(s, i)
  local parts = {}
  local j = i + 1
  while true do
    local c = s:sub(j, j)
    if c == '"' then
      return table.concat(parts), j + 1
    elseif c == "\\" then
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        parts[#parts + 1] = string.char(tonumber(s:sub(j + 2, j + 5), 16) % 256)
        j = j + 6
      else
        parts[#parts + 1] = assert(ESCAPES[e], "bad escape in " .. s)
        j = j + 2
      end
    elseif c == "" then
      error("unterminated string in " .. s)
    else
      parts[#parts + 1] = c
      j = j + 1
    end
  end
end

local function read_value(s, i)
  local c = s:sub(i, i)
  if c == '"' then
    return read_string(s, i)
  end
  for word, v in pairs({ ["true"] = true, ["false"] = false, null = "null" }) do
    if s:sub(i, i + #word - 1) == word then
      if v == "null" then
        return nil, i + #word
      end
      return v, i + #word
    end
  end
  local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  assert(num and #num > 0, "bad value in " .. s)
  return tonumber(num), i + #num
end

-- One line's object.
function _M.decode(line)
  local obj, i = {}, line:find("{", 1, true)
  assert(i, "not an object: " .. line)
  i = i + 1
  while true do
    i = line:find("[^%s,]", i)
    if line:sub(i, i) == "}" then
      return obj
    end
    local key
    key, i = read_string(line, i)
    i = line:find(":", i, true) + 1
    i = line:find("%S", i)
    obj[key], i = read_value(line, i)
  end
end

-- Every line of text, decoded.
function _M.decode_all(text)
  local list = {}
  for line in (text or ""):gmatch("[^\n]+") do
    list[#list + 1] = _M.decode(line)
  end
  return list
end

return _M
