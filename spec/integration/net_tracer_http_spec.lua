-- net_tracer_http_spec.lua - the tracer with the real HTTP/1 module, on
-- replayed records (plain tables with the fields of struct mr_tcp_event and
-- struct mr_net_data): what the kernel can hand over that a protocol module
-- alone never sees: bytes moved by sendfile (no copy), the two directions of
-- a connection out of order in the one ring, connections evicted from the
-- table, and connections first seen in the middle of an exchange.
local C = require("moonrover.consts")
local ffi = require("ffi")
local http1 = require("moonrover.net.protocols.http1")
local tracer = require("moonrover.net.tracer")
local tcp_events = require("support.tcp_events")

local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local CONNECT, ACCEPT, FOUND, CLOSE = C.MR_TCP_CONNECT, C.MR_TCP_ACCEPT, C.MR_TCP_FOUND, C.MR_TCP_CLOSE
local UNKNOWN, CLIENT, SERVER = C.MR_ROLE_UNKNOWN, C.MR_ROLE_CLIENT, C.MR_ROLE_SERVER
local NO_PAYLOAD = C.MR_NET_NO_PAYLOAD

local REQUEST = "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"
local function response_head(length)
  return "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: " .. length .. "\r\n\r\n"
end

-- A client connection's TCP events.
local event = tcp_events.maker("127.0.0.1:40000", "127.0.0.1:8080", 0)

-- A connection's records, each direction's offsets kept as the kernel does.
local function stream(t, conn, role)
  local offsets, holder = { [INGRESS] = 0, [EGRESS] = 0 }, {}
  -- text: the bytes copied; fields.len: bytes moved when more than copied.
  return function(direction, text, ts, fields)
    holder[#holder + 1] = text
    local r = { conn = conn, direction = direction, ts_ns = ts, pid = 42, role = role, len = #text,
      copied = #text, offset = offsets[direction], flags = 0 }
    for k, v in pairs(fields or {}) do
      r[k] = v
    end
    offsets[direction] = offsets[direction] + r.len
    t:on_data(r, ffi.cast("const uint8_t *", text))
  end
end

local function new_tracer(opts)
  local got = { exchanges = {}, events = {} }
  local o = {
    protocols = { http1 },
    on_exchange = function(ex) got.exchanges[#got.exchanges + 1] = ex end,
    on_conn_event = function(ev) got.events[#got.events + 1] = ev end,
  }
  for k, v in pairs(opts or {}) do
    o[k] = v
  end
  return tracer.new(o), got
end

local function events_of(got, kind)
  local list = {}
  for _, ev in ipairs(got.events) do
    if ev.kind == kind then
      list[#list + 1] = ev
    end
  end
  return list
end

describe("the network tracer with the HTTP/1 module", function()
  it("counts a body sent by sendfile (records with no byte copied) in its response", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(ACCEPT, 1, { role = SERVER }))
    local send = stream(t, 1, SERVER)
    send(INGRESS, REQUEST, 1000)
    local head = response_head(10000)
    send(EGRESS, head, 2000)
    send(EGRESS, "", 3000, { len = 4096, copied = 0, flags = NO_PAYLOAD })
    send(EGRESS, "", 4000, { len = 4096, copied = 0, flags = NO_PAYLOAD })
    assert.equal(0, #got.exchanges)
    send(EGRESS, "", 5000, { len = 1808, copied = 0, flags = NO_PAYLOAD })
    assert.equal(1, #got.exchanges)
    local ex = got.exchanges[1]
    assert.same({ "server", "GET", "/index.html", 200, #REQUEST, #head + 10000, 4000 },
      { ex.role, ex.method, ex.target, ex.status, ex.request_bytes, ex.response_bytes, ex.duration_ns })
  end)

  it("pairs a response whose record came through the ring before its request's", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 2))
    local send = stream(t, 2, CLIENT)
    local first = response_head(2) .. "ok"
    -- A reader thread's record of the response can be reserved in the ring
    -- before the writer thread's record of the request it answers.
    send(INGRESS, first, 2000)
    send(EGRESS, REQUEST, 1000)
    send(EGRESS, "GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n", 3000)
    send(INGRESS, response_head(3) .. "two", 4000)
    assert.equal(2, #got.exchanges)
    local a, b = got.exchanges[1], got.exchanges[2]
    assert.same({ "/index.html", 200, #REQUEST, #first, 1000 },
      { a.target, a.status, a.request_bytes, a.response_bytes, a.duration_ns })
    assert.same({ "/two", 200, 1000 }, { b.target, b.status, b.duration_ns })
  end)

  it("pairs a response whose first record came before its request's, the rest after", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 3))
    local send = stream(t, 3, CLIENT)
    local head = response_head(8)
    send(INGRESS, head .. "1234", 2000)
    send(EGRESS, REQUEST, 1000)
    send(INGRESS, "5678", 2500)
    assert.equal(1, #got.exchanges)
    local ex = got.exchanges[1]
    assert.same({ "/index.html", 200, #head + 8, 1500 }, { ex.target, ex.status, ex.response_bytes, ex.duration_ns })
    t:on_tcp_event(event(CLOSE, 3, { ts_ns = 3000 }))
    t:tick(3000 + 300e6, true)
    assert.equal(1, #got.exchanges)
  end)

  it("ends the exchanges of a connection evicted from the table, and says it closed", function()
    local t, got = new_tracer({ max_connections = 2 })
    t:on_tcp_event(event(CONNECT, 4, { ts_ns = 10 }))
    stream(t, 4, CLIENT)(EGRESS, REQUEST, 20)
    t:on_tcp_event(event(CONNECT, 5, { ts_ns = 30 }))
    t:on_tcp_event(event(CONNECT, 6, { ts_ns = 40 }))
    assert.equal(1, t:stats().evicted)
    assert.equal(1, #got.exchanges)
    assert.same({ "/index.html", 0, "no response", 4 },
      { got.exchanges[1].target, got.exchanges[1].status, got.exchanges[1].error, got.exchanges[1].conn })
    local closes = events_of(got, "close")
    assert.equal(1, #closes)
    assert.same({ 4, true, #REQUEST }, { closes[1].conn, closes[1].evicted, closes[1].bytes_sent })
  end)

  it("counts, after an eviction, only the bytes a connection moved since", function()
    local t, got = new_tracer({ max_connections = 1 })
    t:on_tcp_event(event(CONNECT, 7, { ts_ns = 10 }))
    local send = stream(t, 7, CLIENT)
    send(EGRESS, REQUEST, 20)
    t:on_tcp_event(event(CONNECT, 8, { ts_ns = 30 }))
    send(INGRESS, response_head(0), 40)
    t:on_tcp_event(event(CLOSE, 7, { ts_ns = 50, bytes_sent = #REQUEST, bytes_received = #response_head(0) }))
    t:tick(50 + 300e6, true)
    local closes = events_of(got, "close")
    assert.equal(7, closes[#closes].conn)
    local sent, received = 0, 0
    for _, ev in ipairs(closes) do
      if ev.conn == 7 then
        sent, received = sent + ev.bytes_sent, received + ev.bytes_received
      end
    end
    assert.same({ #REQUEST, #response_head(0) }, { sent, received })
  end)

  it("makes an exchange without request fields of a response whose request it never saw", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(FOUND, 9, { role = UNKNOWN }))
    local send = stream(t, 9, 0)
    local old = response_head(4) .. "late"
    send(INGRESS, old, 5000)
    send(EGRESS, REQUEST, 6000)
    send(INGRESS, response_head(0), 7000)
    assert.equal(2, #got.exchanges)
    local a, b = got.exchanges[1], got.exchanges[2]
    assert.same({ "client", 200, #old, 5000, 5000 },
      { a.role, a.status, a.response_bytes, a.response_start_ns, a.response_end_ns })
    assert.is_nil(a.method)
    assert.is_nil(a.target)
    assert.is_nil(a.request_bytes)
    assert.is_nil(a.duration_ns)
    assert.same({ "GET", "/index.html", 1000 }, { b.method, b.target, b.duration_ns })
  end)

  it("holds a response with no request waiting no longer than the idle time", function()
    local t, got = new_tracer({ idle_ns = 500e6 })
    t:on_tcp_event(event(FOUND, 11, { role = UNKNOWN }))
    stream(t, 11, 0)(INGRESS, response_head(0), 1e9)
    t:tick(1.2e9, true)
    assert.equal(0, #got.exchanges)
    t:tick(1.6e9, true)
    assert.equal(1, #got.exchanges)
    assert.same({ 200, "client" }, { got.exchanges[1].status, got.exchanges[1].role })
  end)

  it("classifies a connection first seen in a long body once its next message starts", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(FOUND, 10, { role = UNKNOWN }))
    local send = stream(t, 10, 0)
    for i = 1, 20 do
      send(INGRESS, ("x"):rep(64), i * 100)
    end
    send(EGRESS, REQUEST, 5000)
    send(INGRESS, response_head(0), 6000)
    assert.equal(0, t:stats().unclassified)
    assert.equal(1, #got.exchanges)
    assert.same({ "client", "/index.html", 200 }, { got.exchanges[1].role, got.exchanges[1].target,
      got.exchanges[1].status })
  end)
end)
