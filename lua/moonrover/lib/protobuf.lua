-- protobuf.lua - protobuf wire encoding and decoding for Lua tables, driven by
-- the descriptors protoc writes (--descriptor_set_out): the schema comes from
-- the project's .proto files, never retyped here. Messages are Lua tables with
-- the proto field names; 64-bit integers are Lua numbers (exact to 2^53);
-- bytes and strings are Lua strings; enums are numbers; repeated fields are
-- arrays. Unknown fields are skipped when decoding.
local ffi = require("ffi")

local _M = {}

-- Field types of google/protobuf/descriptor.proto (FieldDescriptorProto.Type).
local T = {
  DOUBLE = 1, FLOAT = 2, INT64 = 3, UINT64 = 4, INT32 = 5, FIXED64 = 6, FIXED32 = 7, BOOL = 8,
  STRING = 9, GROUP = 10, MESSAGE = 11, BYTES = 12, UINT32 = 13, ENUM = 14, SFIXED32 = 15,
  SFIXED64 = 16, SINT32 = 17, SINT64 = 18,
}
local LABEL_REPEATED = 3

local VARINT, I64, LEN, I32 = 0, 1, 2, 5
local WIRE = {
  [T.DOUBLE] = I64, [T.FLOAT] = I32, [T.INT64] = VARINT, [T.UINT64] = VARINT, [T.INT32] = VARINT,
  [T.FIXED64] = I64, [T.FIXED32] = I32, [T.BOOL] = VARINT, [T.STRING] = LEN, [T.MESSAGE] = LEN,
  [T.BYTES] = LEN, [T.UINT32] = VARINT, [T.ENUM] = VARINT, [T.SFIXED32] = I32, [T.SFIXED64] = I64,
  [T.SINT32] = VARINT, [T.SINT64] = VARINT,
}

-- ---------------------------------------------------------------- encoding

local U64T = ffi.typeof("uint64_t")
local I64T = ffi.typeof("int64_t")
local EXACT = 2 ^ 53

-- n as an unsigned 64-bit value: negatives in two's complement, exactly.
local function as_u64(n)
  if n < 0 then
    return ffi.cast(U64T, ffi.cast(I64T, n))
  end
  return ffi.cast(U64T, n)
end

local function varint(out, n)
  local bytes = {}
  if n >= 0 and n < EXACT then
    repeat
      local low = n % 128
      n = (n - low) / 128
      bytes[#bytes + 1] = n > 0 and low + 128 or low
    until n == 0
  else
    local u = as_u64(n)
    repeat
      local low = tonumber(u % 128)
      u = u / 128
      bytes[#bytes + 1] = u > 0 and low + 128 or low
    until u == 0
  end
  out[#out + 1] = string.char(unpack(bytes))
end

local function fixed(out, n, size)
  local bytes = {}
  local u = size == 8 and as_u64(n) or (n < 0 and n + 2 ^ 32 or n)
  for i = 1, size do
    bytes[i] = tonumber(u % 256)
    u = (u - u % 256) / 256
  end
  out[#out + 1] = string.char(unpack(bytes))
end

local function zigzag(n)
  return n >= 0 and 2 * n or -2 * n - 1
end

local DOUBLE_BOX = ffi.typeof("union { double f; uint8_t b[8]; }")
local FLOAT_BOX = ffi.typeof("union { float f; uint8_t b[4]; }")

local function float_bits(x, double)
  local box = (double and DOUBLE_BOX or FLOAT_BOX)()
  box.f = x
  local size = double and 8 or 4
  local chars = {}
  for i = 0, size - 1 do
    chars[i + 1] = box.b[i]
  end
  return string.char(unpack(chars))
end

local encode_message

local function encode_scalar(out, ftype, v, registry, type_name)
  if ftype == T.STRING or ftype == T.BYTES then
    v = tostring(v)
    varint(out, #v)
    out[#out + 1] = v
  elseif ftype == T.MESSAGE then
    local body = encode_message(registry, type_name, v)
    varint(out, #body)
    out[#out + 1] = body
  elseif ftype == T.BOOL then
    varint(out, v and 1 or 0)
  elseif ftype == T.SINT32 or ftype == T.SINT64 then
    varint(out, zigzag(v))
  elseif ftype == T.DOUBLE or ftype == T.FLOAT then
    out[#out + 1] = float_bits(v, ftype == T.DOUBLE)
  elseif WIRE[ftype] == I64 then
    fixed(out, v, 8)
  elseif WIRE[ftype] == I32 then
    fixed(out, v, 4)
  else
    varint(out, v)
  end
end

local function encode_field(out, f, v, registry)
  local tag = f.number * 8
  if f.repeated then
    if type(v) ~= "table" then
      error("field " .. f.name .. " is repeated: give it a list", 0)
    end
    for _, item in ipairs(v) do
      varint(out, tag + WIRE[f.type])
      encode_scalar(out, f.type, item, registry, f.type_name)
    end
    return
  end
  varint(out, tag + WIRE[f.type])
  encode_scalar(out, f.type, v, registry, f.type_name)
end

-- The descriptor of the message type; raises an error for an unknown one.
local function descriptor(registry, type_name)
  local desc = registry[type_name]
  if not desc then
    error("unknown message type " .. tostring(type_name), 0)
  end
  return desc
end

encode_message = function(registry, type_name, msg)
  local desc = descriptor(registry, type_name)
  if type(msg) ~= "table" then
    error(type_name .. ": a message must be a table", 0)
  end
  local out = {}
  for _, f in ipairs(desc.fields) do
    local v = msg[f.name]
    if v ~= nil then
      encode_field(out, f, v, registry)
    end
  end
  for k in pairs(msg) do
    if not desc.by_name[k] then
      error(type_name .. " has no field " .. tostring(k), 0)
    end
  end
  return table.concat(out)
end

-- ---------------------------------------------------------------- decoding

-- Returns the value (a number, or a uint64_t cdata when it may pass 2^53)
-- and the position after it.
local function read_varint(s, pos)
  local n, mul = 0, 1
  for i = pos, math.min(pos + 9, #s) do
    local b = s:byte(i)
    if i - pos == 7 then
      n, mul = ffi.cast(U64T, n), ffi.cast(U64T, mul)
    end
    n = n + (b % 128) * mul
    if b < 128 then
      return n, i + 1
    end
    mul = mul * 128
  end
  error("truncated or overlong varint at byte " .. pos, 0)
end

local function read_fixed(s, pos, size)
  if pos + size - 1 > #s then
    error("truncated fixed-size value at byte " .. pos, 0)
  end
  local n = size == 8 and ffi.cast(U64T, 0) or 0
  for i = pos + size - 1, pos, -1 do
    n = n * 256 + s:byte(i)
  end
  return n, pos + size
end

-- A 32-bit value read as unsigned, as the signed value it encodes.
local function signed32(n)
  n = tonumber(n % 2 ^ 32)
  return n >= 2 ^ 31 and n - 2 ^ 32 or n
end

local function signed64(n)
  return tonumber(ffi.cast(I64T, n))
end

local function bits_to_float(s, pos, double)
  local size = double and 8 or 4
  local box = (double and DOUBLE_BOX or FLOAT_BOX)()
  for i = 0, size - 1 do
    box.b[i] = s:byte(pos + i)
  end
  return tonumber(box.f), pos + size
end

local decode_message

local function from_varint(ftype, n)
  if ftype == T.BOOL then
    return n ~= 0
  elseif ftype == T.INT32 or ftype == T.ENUM then
    return signed32(n)
  elseif ftype == T.INT64 then
    return signed64(n)
  elseif ftype == T.SINT32 or ftype == T.SINT64 then
    local half = tonumber((n - n % 2) / 2)
    return n % 2 == 0 and half or -half - 1
  end
  return tonumber(n)
end

local function read_value(s, pos, f, wire, registry)
  if wire == VARINT then
    local n
    n, pos = read_varint(s, pos)
    return from_varint(f.type, n), pos
  elseif wire == I64 then
    if f.type == T.DOUBLE then
      return bits_to_float(s, pos, true)
    end
    local n
    n, pos = read_fixed(s, pos, 8)
    return f.type == T.SFIXED64 and signed64(n) or tonumber(n), pos
  elseif wire == I32 then
    if f.type == T.FLOAT then
      return bits_to_float(s, pos, false)
    end
    local n
    n, pos = read_fixed(s, pos, 4)
    return f.type == T.SFIXED32 and signed32(n) or n, pos
  end
  local len
  len, pos = read_varint(s, pos)
  len = tonumber(len)
  if pos + len - 1 > #s then
    error("truncated field " .. f.name .. " at byte " .. pos, 0)
  end
  local body = s:sub(pos, pos + len - 1)
  if f.type == T.MESSAGE then
    return decode_message(registry, f.type_name, body), pos + len
  end
  return body, pos + len
end

local function skip(s, pos, wire)
  if wire == VARINT then
    return select(2, read_varint(s, pos))
  elseif wire == I64 then
    return pos + 8
  elseif wire == I32 then
    return pos + 4
  elseif wire == LEN then
    local len
    len, pos = read_varint(s, pos)
    return pos + tonumber(len)
  end
  error("unsupported wire type " .. wire .. " at byte " .. pos, 0)
end

-- A packed repeated scalar: a length-delimited run of values.
local function read_packed(s, pos, f, list)
  local len
  len, pos = read_varint(s, pos)
  local stop = pos + tonumber(len)
  while pos < stop do
    local v
    v, pos = read_value(s, pos, f, WIRE[f.type], nil)
    list[#list + 1] = v
  end
  return stop
end

local function store(msg, f, v)
  if f.repeated then
    local list = msg[f.name] or {}
    list[#list + 1] = v
    msg[f.name] = list
  else
    msg[f.name] = v
  end
end

decode_message = function(registry, type_name, s)
  local desc = descriptor(registry, type_name)
  local msg, pos = {}, 1
  while pos <= #s do
    local key
    key, pos = read_varint(s, pos)
    key = tonumber(key)
    local number, wire = math.floor(key / 8), key % 8
    local f = desc.by_number[number]
    if not f then
      pos = skip(s, pos, wire)
    elseif f.repeated and wire == LEN and WIRE[f.type] ~= LEN then
      msg[f.name] = msg[f.name] or {}
      pos = read_packed(s, pos, f, msg[f.name])
    else
      local v
      v, pos = read_value(s, pos, f, wire, registry)
      store(msg, f, v)
    end
  end
  if pos ~= #s + 1 then
    error("truncated " .. type_name, 0)
  end
  return msg
end

-- ------------------------------------------------------------- descriptors

-- Just enough of descriptor.proto to read a FileDescriptorSet.
local function field(name, number, ftype, repeated, type_name)
  return { name = name, number = number, type = ftype, repeated = repeated, type_name = type_name }
end

local function describe(fields)
  local d = { fields = fields, by_name = {}, by_number = {} }
  for _, f in ipairs(fields) do
    d.by_name[f.name] = f
    d.by_number[f.number] = f
  end
  return d
end

local BOOTSTRAP = {
  set = describe({ field("file", 1, T.MESSAGE, true, "file") }),
  file = describe({
    field("name", 1, T.STRING), field("package", 2, T.STRING),
    field("message_type", 4, T.MESSAGE, true, "message"), field("enum_type", 5, T.MESSAGE, true, "enum"),
  }),
  message = describe({
    field("name", 1, T.STRING), field("field", 2, T.MESSAGE, true, "field"),
    field("nested_type", 3, T.MESSAGE, true, "message"), field("enum_type", 4, T.MESSAGE, true, "enum"),
  }),
  field = describe({
    field("name", 1, T.STRING), field("number", 3, T.INT32), field("label", 4, T.ENUM),
    field("type", 5, T.ENUM), field("type_name", 6, T.STRING),
  }),
  enum = describe({ field("name", 1, T.STRING), field("value", 2, T.MESSAGE, true, "enum_value") }),
  enum_value = describe({ field("name", 1, T.STRING), field("number", 2, T.INT32) }),
}

local function add_messages(registry, enums, prefix, messages)
  for _, m in ipairs(messages or {}) do
    local full = prefix .. "." .. m.name
    local fields = {}
    for _, f in ipairs(m.field or {}) do
      fields[#fields + 1] = field(f.name, f.number, f.type, f.label == LABEL_REPEATED, f.type_name)
    end
    registry[full] = describe(fields)
    add_messages(registry, enums, full, m.nested_type)
    for _, e in ipairs(m.enum_type or {}) do
      enums[full .. "." .. e.name] = e
    end
  end
end

local function enum_table(e)
  local values = {}
  for _, v in ipairs(e.value or {}) do
    values[v.name] = v.number
  end
  return values
end

-- Reads protoc's --descriptor_set_out bytes. Returns a schema: messages by
-- full name (".package.Message") and enums by full name (name -> number).
function _M.load_descriptor_set(bytes)
  local ok, set = pcall(decode_message, BOOTSTRAP, "set", bytes)
  if not ok then
    return nil, "not a descriptor set: " .. set
  end
  local registry, enums = {}, {}
  for _, file in ipairs(set.file or {}) do
    local prefix = file.package and file.package ~= "" and "." .. file.package or ""
    add_messages(registry, enums, prefix, file.message_type)
    for _, e in ipairs(file.enum_type or {}) do
      enums[prefix .. "." .. e.name] = e
    end
  end
  local enum_values = {}
  for name, e in pairs(enums) do
    enum_values[name] = enum_table(e)
  end
  return { messages = registry, enums = enum_values }
end

-- Runs codec over the message type named type_name ("skywalking.v3.Commands"
-- or with a leading dot) and value. Returns its result, or nil and why.
local function run(codec, schema, type_name, value)
  if type_name:sub(1, 1) ~= "." then
    type_name = "." .. type_name
  end
  local ok, result = pcall(codec, schema.messages, type_name, value)
  if not ok then
    return nil, result
  end
  return result
end

-- Encodes msg as the message type. Returns the bytes, or nil and why.
function _M.encode(schema, type_name, msg)
  return run(encode_message, schema, type_name, msg)
end

-- Decodes bytes as the message type. Returns the table, or nil and why.
function _M.decode(schema, type_name, bytes)
  return run(decode_message, schema, type_name, bytes)
end

return _M
