-- exchange.lua - a new exchange (one request and its response) as the
-- protocol parsers fill it in and the tracer hands it on: every field of the
-- contract (docs/network.md) is present from the start, false or 0 while not
-- known, so that filling it in never makes LuaJIT grow the table. The
-- parser's fields come first, then those the tracer adds (the connection's
-- facts and the duration).
local _M = {}

function _M.new(protocol)
  return {
    protocol = protocol, method = false, target = false, version = false, status = 0, host = false,
    request_start_ns = false, request_end_ns = false, response_start_ns = false, response_end_ns = false,
    request_bytes = false, response_bytes = false, trace_id = false, trace_header = false,
    trace_value = false, error = false,
    pid = 0, tid = 0, comm = false, role = false, conn = 0, tls = false, ["local"] = false, remote = false,
    local_port = 0, remote_port = 0, container_id = false, duration_ns = false,
  }
end

-- A parser hands on its exchange with the tracer's fields empty (nil): the
-- tracer fills them in, and their slots stay in the table meanwhile.
function _M.parsed(ex)
  ex.pid, ex.tid, ex.comm, ex.role, ex.conn, ex.tls = nil, nil, nil, nil, nil, nil
  ex["local"], ex.remote, ex.local_port, ex.remote_port = nil, nil, nil, nil
  ex.container_id, ex.duration_ns = nil, nil
  return ex
end

return _M
