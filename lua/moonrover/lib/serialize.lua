-- serialize.lua - turns plain Lua data (nil, booleans, numbers, strings and
-- tables of them, without cycles) into text and back. Scripts use it,
-- through moonrover.agent, to hand their state to their next version across a
-- hot reload: the two versions live in different Lua states.
local _M = {}

local encode

local function encode_number(n)
  if n ~= n then
    return "0/0"
  elseif n == math.huge then
    return "1/0"
  elseif n == -math.huge then
    return "-1/0"
  elseif n == math.floor(n) and math.abs(n) < 2 ^ 53 then
    return string.format("%d", n)
  end
  return string.format("%.17g", n)
end

local function encode_table(t, seen, depth, out)
  if seen[t] then
    error("cannot serialize a table that contains itself", depth + 2)
  end
  seen[t] = true
  out[#out + 1] = "{"
  for k, v in pairs(t) do
    out[#out + 1] = "["
    encode(k, seen, depth + 1, out)
    out[#out + 1] = "]="
    encode(v, seen, depth + 1, out)
    out[#out + 1] = ","
  end
  out[#out + 1] = "}"
  seen[t] = nil
end

encode = function(v, seen, depth, out)
  local kind = type(v)
  if kind == "nil" or kind == "boolean" then
    out[#out + 1] = tostring(v)
  elseif kind == "number" then
    out[#out + 1] = encode_number(v)
  elseif kind == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif kind == "table" then
    encode_table(v, seen, depth, out)
  else
    error("cannot serialize a " .. kind .. " (only nil, booleans, numbers, strings and tables)", depth + 2)
  end
end

-- Returns the text form of v; raises an error for functions, cdata, cycles.
function _M.encode(v)
  local out = {}
  encode(v, {}, 1, out)
  return table.concat(out)
end

-- Returns the value, or nil and an error for text that encode did not make.
function _M.decode(text)
  local chunk, err = loadstring("return " .. text, "=serialized state")
  if not chunk then
    return nil, err
  end
  setfenv(chunk, {})
  local ok, value = pcall(chunk)
  if not ok then
    return nil, value
  end
  return value
end

return _M
