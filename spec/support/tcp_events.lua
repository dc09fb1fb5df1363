-- tcp_events.lua - TCP event records as the data plane hands them to the
-- network tracer, for the tracer's specs.
local C = require("moonrover.consts")
local tables = require("support.tables")

local _M = {}

-- An "a.b.c.d:port" endpoint as a record holds it: the address's four bytes
-- from index 0, and the port.
local function endpoint(text)
  local a, b, c, d, port = text:match("^(%d+)%.(%d+)%.(%d+)%.(%d+):(%d+)$")
  assert(a, "not an IPv4 endpoint: " .. text)
  return { [0] = tonumber(a), tonumber(b), tonumber(c), tonumber(d) }, tonumber(port)
end

-- The maker of a client's TCP events between the endpoints local_ep and
-- remote_ep, each with duration_ns: make(kind, conn, fields) gives an event
-- of process 42 ("app") that moved nothing, fields replacing any of that.
function _M.maker(local_ep, remote_ep, duration_ns)
  return function(kind, conn, fields)
    local local_addr, local_port = endpoint(local_ep)
    local remote_addr, remote_port = endpoint(remote_ep)
    return tables.merged({ kind = kind, conn = conn, ts_ns = 1000, pid = 42, comm = "app", role = C.MR_ROLE_CLIENT,
      family = 2, local_addr = local_addr, remote_addr = remote_addr, local_port = local_port,
      remote_port = remote_port, duration_ns = duration_ns, bytes_sent = 0, bytes_received = 0, retransmits = 0 },
      fields)
  end
end

return _M
