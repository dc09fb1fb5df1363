-- tracer_memory_spec.lua - the Lua memory the tracer keeps per connection:
-- 65,536 server connections made by replayed records (plain tables, as the
-- kernel's), each with one request and its response, then idle; the live
-- memory after a full collection, divided by the connections, must be at
-- most 300 bytes. The protocol is the tracer spec's kind: a request is a
-- record starting with "Q", a response one starting with "A".
local C = require("moonrover.consts")
local ffi = require("ffi")
local tracer = require("moonrover.net.tracer")

local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local CONNECTIONS = 65536

local qa = { name = "qa" }
function qa.detect(ptr, len, is_request)
  return len > 0 and ptr[0] == (is_request and 81 or 65)
end
function qa.new_state()
  return { pending = {} }
end
function qa.on_data(state, is_request, _, copied, total, ts, emit)
  if is_request and copied > 0 then
    state.pending[#state.pending + 1] = { protocol = "qa", request_start_ns = ts, request_bytes = total }
  elseif copied > 0 and #state.pending > 0 then
    local ex = table.remove(state.pending, 1)
    ex.status, ex.response_end_ns, ex.response_bytes = 200, ts, total
    emit(ex)
  end
end
function qa.on_gap() end
function qa.on_close() end
function qa.at_rest(state)
  return #state.pending == 0
end

local function live_kib()
  collectgarbage("collect")
  collectgarbage("collect")
  return collectgarbage("count")
end

describe("the network tracer's memory", function()
  it("is at most 300 bytes of Lua per idle connection, 65,536 of them", function()
    local exchanges = 0
    local t = tracer.new({ protocols = { qa }, on_exchange = function() exchanges = exchanges + 1 end,
      on_conn_event = function() end })
    local q, a = ffi.cast("const uint8_t *", "Q"), ffi.cast("const uint8_t *", "A")
    local ev = { kind = C.MR_TCP_ACCEPT, conn = 0, ts_ns = 0, pid = 42, comm = "server", role = C.MR_ROLE_SERVER,
      family = 2, local_addr = { [0] = 127, 0, 0, 1 }, remote_addr = { [0] = 127, 0, 0, 2 }, local_port = 8080,
      remote_port = 0, duration_ns = 0, bytes_sent = 0, bytes_received = 0, retransmits = 0 }
    local r = { conn = 0, direction = INGRESS, ts_ns = 0, pid = 42, tid = 42, role = C.MR_ROLE_SERVER, len = 1,
      copied = 1, offset = 0, flags = 0 }
    local before = live_kib()
    for i = 1, CONNECTIONS do
      ev.conn, ev.remote_port, ev.ts_ns = 1e6 + i, 1024 + i % 60000, i * 1000
      t:on_tcp_event(ev)
      r.conn, r.ts_ns, r.direction = 1e6 + i, i * 1000 + 1, INGRESS
      t:on_data(r, q)
      r.ts_ns, r.direction = i * 1000 + 2, EGRESS
      t:on_data(r, a)
    end
    local now = CONNECTIONS * 1000
    for k = 1, 30 do
      t:tick(now + k * 200e6, true)
    end
    local per_conn = (live_kib() - before) * 1024 / CONNECTIONS
    assert.same({ CONNECTIONS, CONNECTIONS }, { t:stats().connections, exchanges })
    assert(per_conn <= 300, string.format("%.0f bytes per connection", per_conn))
  end)
end)
