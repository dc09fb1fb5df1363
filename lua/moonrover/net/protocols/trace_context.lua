-- trace_context.lua - the trace id a request carries in a tracing header:
-- W3C traceparent, SkyWalking sw8, Zipkin's b3 single header and
-- x-b3-traceid. Each function takes the header's value (surrounding blanks
-- already removed) and returns the trace id, or nil when the value is not a
-- well-formed header of its kind. Pure string work: protocol parsers call it
-- only for the few requests that carry such a header.
local _M = {}

local byte, char, lower = string.byte, string.char, string.lower

-- The headers in the order a request carrying several is read: sw8 first
-- because SkyWalking's backend knows its traces by that id.
_M.HEADERS = { "sw8", "traceparent", "b3", "x-b3-traceid" }

local function all_zero(hex)
  return hex:find("^0+$") ~= nil
end

-- traceparent: version "-" trace-id "-" parent-id "-" flags, in lowercase
-- or uppercase hex; a later version may append "-" and more. Version ff and
-- all-zero ids are invalid.
function _M.traceparent(value)
  local version, id, parent, rest = value:match("^(%x%x)%-(%x+)%-(%x+)%-%x%x(.*)$")
  if not version or #id ~= 32 or #parent ~= 16 or lower(version) == "ff" then
    return nil
  end
  if rest ~= "" and (version == "00" or rest:sub(1, 1) ~= "-") then
    return nil
  end
  if all_zero(id) or all_zero(parent) then
    return nil
  end
  return lower(id)
end

local BASE64 = {}
do
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  for i = 1, #alphabet do
    BASE64[byte(alphabet, i)] = i - 1
  end
end

-- Standard base64 with optional "=" padding; nil when s is not base64.
local function base64_decode(s)
  local n = #s
  while n > 0 and byte(s, n) == 61 do
    n = n - 1
  end
  if #s - n > 2 or n % 4 == 1 then
    return nil
  end
  local out, acc, bits = {}, 0, 0
  for i = 1, n do
    local v = BASE64[byte(s, i)]
    if not v then
      return nil
    end
    acc = acc * 64 + v
    bits = bits + 6
    if bits >= 8 then
      bits = bits - 8
      local b = math.floor(acc / 2 ^ bits)
      out[#out + 1] = char(b)
      acc = acc - b * 2 ^ bits
    end
  end
  return table.concat(out)
end

-- sw8: eight dash-separated fields (sample, trace id, segment id, span id,
-- parent service, parent instance, parent endpoint, target address), all
-- but sample and span id base64; the trace id is the second, decoded. It
-- must decode to printable ASCII.
function _M.sw8(value)
  local fields = {}
  for field in (value .. "-"):gmatch("([^%-]*)%-") do
    fields[#fields + 1] = field
  end
  if #fields ~= 8 or (fields[1] ~= "0" and fields[1] ~= "1") then
    return nil
  end
  local id = base64_decode(fields[2])
  if not id or id == "" or id:find("[^\33-\126]") then
    return nil
  end
  return id
end

-- The segment id (third field, decoded) and span id (fourth) of a sw8
-- header, or nil when the value is not a well-formed sw8 header.
function _M.sw8_span(value)
  if not _M.sw8(value) then
    return nil
  end
  local segment, span = value:match("^[^%-]*%-[^%-]*%-([^%-]*)%-([^%-]*)%-")
  segment = base64_decode(segment)
  if not segment or not span:find("^%d+$") then
    return nil
  end
  return segment, span
end

local function b3_id(id)
  if (#id ~= 16 and #id ~= 32) or all_zero(id) then
    return nil
  end
  return lower(id)
end

-- b3 single header: trace id (16 or 32 hex) "-" span id (16 hex), then
-- optionally "-" sampling state (0, 1 or d) and "-" parent span id. A value
-- holding only a sampling state carries no trace id.
function _M.b3(value)
  local id, span, rest = value:match("^(%x+)%-(%x+)(.*)$")
  if not id or #span ~= 16 then
    return nil
  end
  if rest ~= "" and not rest:find("^%-[01d]$") and not rest:find("^%-[01d]%-" .. ("%x"):rep(16) .. "$") then
    return nil
  end
  return b3_id(id)
end

-- x-b3-traceid: the trace id alone, 16 or 32 hex.
function _M.x_b3_traceid(value)
  if value:find("[^%x]") then
    return nil
  end
  return b3_id(value)
end

-- The parser of each header by its lowercase name.
_M.BY_HEADER = {
  ["sw8"] = _M.sw8,
  ["traceparent"] = _M.traceparent,
  ["b3"] = _M.b3,
  ["x-b3-traceid"] = _M.x_b3_traceid,
}

return _M
