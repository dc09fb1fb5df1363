-- destination_filter.lua - which connections and listening sockets the
-- coroot-compatible metrics leave out, as coroot-node-agent does:
--   - a destination or listening port in the ephemeral range (default
--     "32768-60999", coroot's --ephemeral-port-range syntax: ranges separated
--     by spaces or commas), except 50051 (gRPC's well-known port): such a port
--     is a client's side of a connection, one series per connection;
--   - a link-local destination (169.254.0.0/16, fe80::/10);
--   - a public destination (neither loopback nor private: 10/8, 172.16/12,
--     192.168/16, 100.64/10, fc00::/7) unless it is in one of the networks
--     given (coroot's --track-public-network).
-- Addresses are "ip:port" or "[ipv6]:port"; an IPv4-mapped IPv6 address
-- (::ffff:a.b.c.d) is judged as its IPv4 address.
--
-- Destinations are judged once each: the coroot metrics ask for every
-- outbound exchange, and parsing an address takes string patterns (which
-- LuaJIT does not compile) and tables, about 300 ns; a verdict depends only
-- on the address and the filter's settings, so it is kept by address (at
-- most CACHE_MAX of them, all forgotten at once when full).
local _M = {}

local WELL_KNOWN = { [50051] = true }
local CACHE_MAX = 4096

-- The 4 bytes of a dotted IPv4 address, or nil.
local function ipv4_bytes(s)
  local a, b, c, d = s:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if not a then
    return nil
  end
  local out = { tonumber(a), tonumber(b), tonumber(c), tonumber(d) }
  for i = 1, 4 do
    if out[i] > 255 then
      return nil
    end
  end
  return out
end

-- The 16-bit groups of one side of "::" (maybe ending in a dotted IPv4
-- address), or nil when malformed.
local function ipv6_groups(s)
  local out = {}
  if s == "" then
    return out
  end
  local fields = {}
  for f in (s .. ":"):gmatch("([^:]*):") do
    fields[#fields + 1] = f
  end
  for i, f in ipairs(fields) do
    local v4 = i == #fields and f:find(".", 1, true) and ipv4_bytes(f)
    if v4 then
      out[#out + 1] = v4[1] * 256 + v4[2]
      out[#out + 1] = v4[3] * 256 + v4[4]
    elseif f:find("^%x%x?%x?%x?$") then
      out[#out + 1] = tonumber(f, 16)
    else
      return nil
    end
  end
  return out
end

-- The 16 bytes of an IPv6 address, or nil.
local function ipv6_bytes(s)
  local head, tail = s:match("^(.-)::(.*)$")
  local groups
  if head then
    local h, t = ipv6_groups(head), ipv6_groups(tail)
    if not h or not t or #h + #t > 7 or tail:find("::", 1, true) then
      return nil
    end
    groups = h
    for _ = 1, 8 - #h - #t do
      groups[#groups + 1] = 0
    end
    for _, g in ipairs(t) do
      groups[#groups + 1] = g
    end
  else
    groups = ipv6_groups(s)
    if not groups or #groups ~= 8 then
      return nil
    end
  end
  local out = {}
  for i, g in ipairs(groups) do
    out[2 * i - 1], out[2 * i] = math.floor(g / 256), g % 256
  end
  return out
end

-- The bytes of an IP address (4 for IPv4, IPv4-mapped IPv6 included; 16 for
-- IPv6), or nil when it is not one.
function _M.ip_bytes(s)
  local v4 = ipv4_bytes(s)
  if v4 then
    return v4
  end
  local v6 = ipv6_bytes(s)
  if not v6 then
    return nil
  end
  for i = 1, 10 do
    if v6[i] ~= 0 then
      return v6
    end
  end
  if v6[11] == 255 and v6[12] == 255 then
    return { v6[13], v6[14], v6[15], v6[16] }
  end
  return v6
end

-- ip (text), port (number) of "ip:port" or "[ipv6]:port", or nil.
function _M.split_addr(addr)
  if type(addr) ~= "string" then
    return nil
  end
  local ip, port = addr:match("^%[([^%]]+)%]:(%d+)$")
  if not ip then
    ip, port = addr:match("^([^:]+):(%d+)$")
  end
  port = tonumber(port)
  if not ip or port > 65535 then
    return nil
  end
  return ip, port
end

-- Whether bytes lie in the network of prefix { bytes, bits }.
local function contains(prefix, bytes)
  local net, bits = prefix[1], prefix[2]
  if #net ~= #bytes then
    return false
  end
  for i = 1, #net do
    local take = bits - 8 * (i - 1)
    if take <= 0 then
      return true
    end
    local unit = 2 ^ (8 - math.min(8, take))
    if math.floor(bytes[i] / unit) ~= math.floor(net[i] / unit) then
      return false
    end
  end
  return true
end

-- A network "ip/bits" as { bytes, bits }, or nil and why.
function _M.parse_network(text)
  local ip, bits = tostring(text):match("^([^/]+)/(%d+)$")
  local bytes = ip and _M.ip_bytes(ip)
  bits = tonumber(bits)
  if not bytes or bits > 8 * #bytes then
    return nil, "invalid network '" .. tostring(text) .. "' (expected ip/bits, such as 203.0.113.0/24)"
  end
  return { bytes, bits }
end

local function network(text)
  return assert(_M.parse_network(text))
end

local LOOPBACK = { network("127.0.0.0/8"), network("::1/128") }
local LINK_LOCAL = { network("169.254.0.0/16"), network("fe80::/10") }
local PRIVATE = {
  network("10.0.0.0/8"), network("172.16.0.0/12"), network("192.168.0.0/16"), network("100.64.0.0/10"),
  network("fc00::/7"),
}

local function in_any(list, bytes)
  for _, p in ipairs(list) do
    if contains(p, bytes) then
      return true
    end
  end
  return false
end

-- Port ranges from coroot's syntax ("32768-60999", "1024-2047 30000-65535"),
-- or nil and why. "" gives none.
function _M.parse_port_ranges(text)
  local ranges = {}
  for r in tostring(text):gsub(",", " "):gmatch("%S+") do
    local from, to = r:match("^(%d+)%-(%d+)$")
    from, to = tonumber(from), tonumber(to)
    if not from or from > to or to > 65535 then
      return nil, "invalid port range '" .. r .. "' (expected FROM-TO, such as 32768-60999)"
    end
    ranges[#ranges + 1] = { from, to }
  end
  return ranges
end

local Filter = {}
Filter.__index = Filter

-- new(opts): a filter, or nil and why. opts.ephemeral_ports (a string, default
-- "32768-60999"; "" skips no port), opts.public_networks (a list of "ip/bits").
function _M.new(opts)
  opts = opts or {}
  local ranges, err = _M.parse_port_ranges(opts.ephemeral_ports or "32768-60999")
  if not ranges then
    return nil, err
  end
  local public = {}
  for _, text in ipairs(opts.public_networks or {}) do
    public[#public + 1], err = _M.parse_network(text)
    if err then
      return nil, err
    end
  end
  return setmetatable({ ranges = ranges, public = public, verdicts = {}, n_verdicts = 0 }, Filter)
end

function Filter:ephemeral(port)
  if WELL_KNOWN[port] then
    return false
  end
  for _, r in ipairs(self.ranges) do
    if port >= r[1] and port <= r[2] then
      return true
    end
  end
  return false
end

-- Whether the connections to addr are left out, and why ("bad_address" when
-- addr is not "ip:port"), found by parsing addr.
function Filter:judge_destination(addr)
  local ip, port = _M.split_addr(addr)
  local bytes = ip and _M.ip_bytes(ip)
  if not bytes then
    return true, "bad_address"
  end
  if self:ephemeral(port) or in_any(LINK_LOCAL, bytes) then
    return true
  end
  if in_any(LOOPBACK, bytes) or in_any(PRIVATE, bytes) then
    return false
  end
  return not in_any(self.public, bytes)
end

-- Whether the connections to addr are left out ("bad_address" as the second
-- value when addr is not "ip:port"). A verdict is kept as false (kept in),
-- true (left out) or the reason (left out, with it).
function Filter:skip_destination(addr)
  local v = self.verdicts[addr]
  if v == nil then
    local skip, why = self:judge_destination(addr)
    v = skip and (why or true)
    if type(addr) == "string" then
      if self.n_verdicts >= CACHE_MAX then
        self.verdicts, self.n_verdicts = {}, 0
      end
      self.verdicts[addr] = v
      self.n_verdicts = self.n_verdicts + 1
    end
  end
  if v == true or v == false then
    return v
  end
  return true, v
end

-- Whether the listening socket at addr is left out ("bad_address" as the
-- second value when addr is not "ip:port").
function Filter:skip_listen(addr)
  local ip, port = _M.split_addr(addr)
  if not (ip and _M.ip_bytes(ip)) then
    return true, "bad_address"
  end
  return self:ephemeral(port)
end

return _M
