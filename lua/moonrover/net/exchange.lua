-- exchange.lua - the exchanges (one request and its response) as the
-- protocol parsers fill them in and the tracer hands them on: every field of
-- the contract (docs/network.md) is present from the start, false or 0 while
-- not known, so that filling one in never makes LuaJIT grow the table. The
-- parser's fields come first, then those the tracer adds (the connection's
-- facts and the duration).
--
-- Exchanges come from a pool and go back to it (release) once the script's
-- handlers have returned, when the script said it keeps none past its
-- callback (reuse(); docs/lua-api.md): then no exchange costs an
-- allocation. The pool is per Lua state (module state: the parsers take
-- from it and the script tracer of the same state gives back), bounded, and
-- trimmed by its owner to what its batches need (trim): a burst of
-- exchanges in flight at once (20,000 idle clients each sending a request
-- before reading any answer) would otherwise leave thousands pooled, each
-- about 800 bytes.
local _M = {}

local POOL_MAX = 4096

local pool, pooled = {}, 0
local reusing = false

local function fresh(protocol)
  return {
    protocol = protocol, method = false, target = false, version = false, status = 0, host = false,
    request_start_ns = false, request_end_ns = false, response_start_ns = false, response_end_ns = false,
    request_bytes = false, response_bytes = false, trace_id = false, trace_header = false,
    trace_value = false, error = false,
    pid = 0, tid = 0, comm = false, role = false, conn = 0, tls = false, ["local"] = false, remote = false,
    local_port = 0, remote_port = 0, container_id = false, duration_ns = false,
  }
end

-- An exchange of protocol with nothing known yet.
function _M.new(protocol)
  if pooled == 0 then
    return fresh(protocol)
  end
  local ex = pool[pooled]
  pool[pooled] = nil
  pooled = pooled - 1
  ex.protocol = protocol
  return ex
end

-- Gives ex back to the pool, emptied; nothing may read it afterwards.
function _M.release(ex)
  ex.method, ex.target, ex.version, ex.status, ex.host = false, false, false, 0, false
  ex.request_start_ns, ex.request_end_ns, ex.response_start_ns, ex.response_end_ns = false, false, false, false
  ex.request_bytes, ex.response_bytes, ex.trace_id, ex.trace_header = false, false, false, false
  ex.trace_value, ex.error = false, false
  ex.pid, ex.tid, ex.comm, ex.role, ex.conn, ex.tls, ex["local"], ex.remote = 0, 0, false, false, 0, false, false, false
  ex.local_port, ex.remote_port, ex.container_id, ex.duration_ns = 0, 0, false, false
  if pooled < POOL_MAX then
    pooled = pooled + 1
    pool[pooled] = ex
  end
end

-- Keeps at most keep exchanges pooled, the others left to the collector.
function _M.trim(keep)
  for i = pooled, keep + 1, -1 do
    pool[i] = nil
  end
  pooled = math.min(pooled, keep)
end

-- reuse(on): this Lua state's network handlers keep no exchange (nor batch
-- list) past their call, so the tracer may reuse them (on: true unless
-- false). reused(): whether it may.
function _M.reuse(on)
  reusing = on ~= false
end

function _M.reused()
  return reusing
end

-- A plain table with the fields ex has (nil ones left out): the copy a
-- handler keeps when exchanges are reused.
function _M.copy(ex)
  local c = {}
  for k, v in pairs(ex) do
    c[k] = v
  end
  return c
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
