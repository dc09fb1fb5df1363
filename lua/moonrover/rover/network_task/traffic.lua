-- traffic.lua - what a NETWORK task's meters are grouped by, and their
-- labels as OAP's rules for Rover's network profiling read them: the local
-- process (`<role>_process_id`, its OAP id), the other end (the peer's OAP id
-- when it is a process of the same task, else `<peer>_local=true` when it is
-- on this host, else `<peer>_address=ip:port`), `side`, `protocol` and
-- `is_ssl`, in that order. A connection whose role is unknown counts as a
-- client, as in Rover.
local _M = {}

local PEER_ROLE = { client = "server", server = "client" }

-- The role meters use: "client" or "server".
function _M.role(role)
  return role == "server" and "server" or "client"
end

-- The IP of "ip:port" or "[ip6]:port".
function _M.ip(addr)
  if type(addr) ~= "string" then
    return nil
  end
  return addr:match("^%[(.*)%]:%d+$") or addr:match("^([^:]+):%d+$")
end

-- Whether ip is a loopback address.
function _M.loopback(ip)
  return ip == "::1" or (ip ~= nil and ip:find("^127%.") ~= nil)
end

-- The peers of a task: which addresses its processes' open connections
-- have at their local end (counted, since a server's accepted connections
-- share one), and which IPs are this host's (loopback, and every local
-- address its connections had). member: { id = OAP process id, ... }.
function _M.peers()
  return { by_addr = {}, local_ips = {}, labels = {} }
end

-- A connection of member whose local end is addr opened (or was first seen).
function _M.add_local(peers, addr, member)
  local e = peers.by_addr[addr]
  if e then
    e.n = e.n + 1
  else
    peers.by_addr[addr] = { member = member, n = 1 }
  end
  local ip = _M.ip(addr)
  if ip then
    peers.local_ips[ip] = true
  end
end

-- A connection whose local end is addr is gone.
function _M.remove_local(peers, addr)
  local e = peers.by_addr[addr]
  if e then
    e.n = e.n - 1
    if e.n <= 0 then
      peers.by_addr[addr] = nil
    end
  end
end

-- The task's process at addr, or nil.
function _M.member_at(peers, addr)
  local e = addr and peers.by_addr[addr]
  return e and e.member
end

local function remote_label(peers, peer_role, remote)
  local member = _M.member_at(peers, remote)
  if member then
    return peer_role .. "_process_id", member.id
  end
  local ip = _M.ip(remote)
  if ip and (_M.loopback(ip) or peers.local_ips[ip]) then
    return peer_role .. "_local", "true"
  end
  return peer_role .. "_address", remote or "unknown"
end

-- The key of a traffic (one series set) and its labels, a list of
-- { name =, value = } in Rover's order. The key holds every label value, so
-- the labels are made once per key (this runs for every exchange).
function _M.of(peers, member, role, remote, protocol)
  role = _M.role(role)
  protocol = protocol or "unknown"
  local rname, rvalue = remote_label(peers, PEER_ROLE[role], remote)
  local key = member.id .. "|" .. role .. "|" .. rname .. "|" .. rvalue .. "|" .. protocol
  local labels = peers.labels[key]
  if not labels then
    labels = {
      { name = role .. "_process_id", value = member.id },
      { name = rname, value = rvalue },
      { name = "side", value = role },
      { name = "protocol", value = protocol },
      { name = "is_ssl", value = "false" },
    }
    peers.labels[key] = labels
  end
  return key, labels, role
end

return _M
