-- serialize.lua - turns plain Lua data (nil, booleans, numbers, strings and
-- tables of them, without cycles) into text and back. Scripts use it,
-- through moonrover.agent, to hand their state to their next version across a
-- hot reload: the two versions live in different Lua states.
--
-- The text is a Lua expression, read back by LuaJIT's parser (in C, much
-- faster than a decoder in Lua). A function of LuaJIT holds at most 65,536
-- constants (each table constructor's template is one), which a network
-- tracer's state of tens of thousands of connections passes: a table whose
-- entries hold more than PIECE constants is written as pieces, each made by a
-- function of its own, and put back together by M at decoding.
local _M = {}

local PIECE = 16384 -- constants a piece may hold, counted generously (each scalar and table)

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

-- Ends the piece being written: its text goes to pieces.
local function close_piece(piece, pieces)
  piece[#piece + 1] = "}"
  pieces[#pieces + 1] = table.concat(piece)
end

-- The pieces put back together, each made by its own function.
local function joined(pieces)
  for i, p in ipairs(pieces) do
    pieces[i] = "function()return " .. p .. " end"
  end
  return "M{" .. table.concat(pieces, ",") .. "}"
end

-- Returns the table's text and the constants it puts in the function it
-- is written in.
local function encode_table(t, seen, depth)
  if seen[t] then
    error("cannot serialize a table that contains itself", depth + 2)
  end
  seen[t] = true
  local pieces, piece, n = {}, { "{" }, 0
  for k, v in pairs(t) do
    local key, kn = encode(k, seen, depth + 1)
    local value, vn = encode(v, seen, depth + 1)
    if n > 0 and n + kn + vn > PIECE then
      close_piece(piece, pieces)
      piece, n = { "{" }, 0
    end
    piece[#piece + 1] = "[" .. key .. "]=" .. value .. ","
    n = n + kn + vn
  end
  close_piece(piece, pieces)
  seen[t] = nil
  if #pieces == 1 then
    return pieces[1], n + 1
  end
  return joined(pieces), #pieces + 1
end

-- Returns v's text and the constants it costs.
encode = function(v, seen, depth)
  local kind = type(v)
  if kind == "nil" or kind == "boolean" then
    return tostring(v), 0
  elseif kind == "number" then
    return encode_number(v), 1
  elseif kind == "string" then
    return string.format("%q", v), 1
  elseif kind == "table" then
    return encode_table(v, seen, depth)
  end
  error("cannot serialize a " .. kind .. " (only nil, booleans, numbers, strings and tables)", depth + 2)
end

-- Returns the text form of v; raises an error for functions, cdata, cycles.
function _M.encode(v)
  return (encode(v, {}, 1))
end

-- The table whose pieces the functions of list make.
local function merge(list)
  local t = {}
  for _, piece in ipairs(list) do
    for k, v in pairs(piece()) do
      t[k] = v
    end
  end
  return t
end

-- Returns the value, or nil and an error for text that encode did not make.
function _M.decode(text)
  local chunk, err = loadstring("return " .. text, "=serialized state")
  if not chunk then
    return nil, err
  end
  setfenv(chunk, { M = merge })
  local ok, value = pcall(chunk)
  if not ok then
    return nil, value
  end
  return value
end

return _M
