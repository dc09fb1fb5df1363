-- address.lua - "ip:port" text of the addresses in the network records
-- (struct mr_tcp_event): IPv4 as a.b.c.d:port, IPv6 as [addr]:port in the
-- short form of RFC 5952, and IPv4-mapped IPv6 (::ffff:a.b.c.d) as IPv4, as
-- a dual-stack socket talking to an IPv4 peer is one.
local _M = {}

local AF_INET = 2

local function ipv4(b, at)
  return string.format("%d.%d.%d.%d", b[at], b[at + 1], b[at + 2], b[at + 3])
end

local function is_v4_mapped(b)
  for i = 0, 9 do
    if b[i] ~= 0 then
      return false
    end
  end
  return b[10] == 0xff and b[11] == 0xff
end

-- The longest run of zero groups (at least two), as first index and length.
local function zero_run(groups)
  local best_at, best_len, at, len = nil, 1, nil, 0
  for i = 1, 8 do
    if groups[i] == 0 then
      at, len = at or i, len + 1
      if len > best_len then
        best_at, best_len = at, len
      end
    else
      at, len = nil, 0
    end
  end
  return best_at, best_len
end

local function ipv6(b)
  local groups = {}
  for i = 1, 8 do
    groups[i] = b[(i - 1) * 2] * 256 + b[(i - 1) * 2 + 1]
  end
  local at, len = zero_run(groups)
  local parts, i = {}, 1
  while i <= 8 do
    if i == at then
      parts[#parts + 1] = (i == 1 and ":" or "") .. (i + len > 8 and ":" or "")
      i = i + len
    else
      parts[#parts + 1] = string.format("%x", groups[i])
      i = i + 1
    end
  end
  return table.concat(parts, ":")
end

-- The text of a 16-byte address (a uint8_t[16] cdata) of family with port.
function _M.format(bytes, family, port)
  if family == AF_INET then
    return ipv4(bytes, 0) .. ":" .. port
  end
  if is_v4_mapped(bytes) then
    return ipv4(bytes, 12) .. ":" .. port
  end
  return "[" .. ipv6(bytes) .. "]:" .. port
end

return _M
