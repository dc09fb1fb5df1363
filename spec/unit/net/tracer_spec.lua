-- net_tracer_spec.lua - the tracer on replayed records (plain tables with
-- the fields of struct mr_tcp_event and struct mr_net_data) and a small
-- protocol made up for the spec: a request is a record starting with "Q", a
-- response one starting with "A"; each response ends the oldest request.
local C = require("moonrover.consts")
local ffi = require("ffi")
local tracer = require("moonrover.net.tracer")
local tcp_events = require("support.tcp_events")

local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local CONNECT, ACCEPT, FOUND, CLOSE = C.MR_TCP_CONNECT, C.MR_TCP_ACCEPT, C.MR_TCP_FOUND, C.MR_TCP_CLOSE
local UNKNOWN, CLIENT, SERVER = C.MR_ROLE_UNKNOWN, C.MR_ROLE_CLIENT, C.MR_ROLE_SERVER

local qa = { name = "qa" }
function qa.detect(ptr, len, is_request)
  return len > 0 and ptr[0] == (is_request and 81 or 65)
end
function qa.new_state()
  return { pending = {}, gaps = 0 }
end
function qa.on_data(state, is_request, ptr, copied, total, ts, emit)
  if is_request and copied > 0 and ptr[0] == 81 then
    state.pending[#state.pending + 1] = { protocol = "qa", request_start_ns = ts, request_bytes = total }
  elseif not is_request and copied > 0 and ptr[0] == 65 and #state.pending > 0 then
    local ex = table.remove(state.pending, 1)
    ex.status, ex.response_start_ns, ex.response_end_ns, ex.response_bytes = 200, ts, ts, total
    emit(ex)
  end
end
function qa.on_gap(state)
  state.gaps = state.gaps + 1
end
function qa.on_close(state, _, emit)
  for _, ex in ipairs(state.pending) do
    ex.status, ex.error = 0, "no response"
    emit(ex)
  end
  state.pending = {}
end

-- A client connection's TCP events.
local event = tcp_events.maker("10.0.0.1:40000", "10.0.0.2:80", 250000)

-- A data record and its payload pointer (the text kept alive in holder).
local holder = {}
local function data(conn, direction, text, fields)
  holder[#holder + 1] = text
  local r = { conn = conn, direction = direction, ts_ns = 2000, pid = 42, role = CLIENT, len = #text, copied = #text,
    offset = 0, flags = 0 }
  for k, v in pairs(fields or {}) do
    r[k] = v
  end
  return r, ffi.cast("const uint8_t *", text)
end

local function new_tracer(opts)
  local got = { exchanges = {}, events = {}, verdicts = {} }
  local o = {
    protocols = { qa },
    on_exchange = function(ex) got.exchanges[#got.exchanges + 1] = ex end,
    on_conn_event = function(ev) got.events[#got.events + 1] = ev end,
    set_verdict = function(conn, v) got.verdicts[conn] = v end,
  }
  for k, v in pairs(opts or {}) do
    o[k] = v
  end
  return tracer.new(o), got
end

describe("the network tracer", function()
  it("pairs a client's request and response into one exchange with the connection's facts", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 7))
    t:on_data(data(7, EGRESS, "Q1", { ts_ns = 5000 }))
    t:on_data(data(7, INGRESS, "A1", { ts_ns = 9000, offset = 0 }))
    assert.equal(1, #got.exchanges)
    local ex = got.exchanges[1]
    assert.same({ "client", 42, "app", "10.0.0.1:40000", "10.0.0.2:80", 40000, 80, 4000, 7 },
      { ex.role, ex.pid, ex.comm, ex["local"], ex.remote, ex.local_port, ex.remote_port, ex.duration_ns, ex.conn })
    assert.equal("connect", got.events[1].kind)
    assert.equal(250000, got.events[1].connect_ns)
  end)

  it("asks once per connection whether to hide its process, then only counts its bytes", function()
    local asked = 0
    local t, got = new_tracer({ hide = function(pid)
      asked = asked + 1
      return pid == 42
    end })
    t:on_tcp_event(event(CONNECT, 7))
    t:on_data(data(7, EGRESS, "Q1", { ts_ns = 5000 }))
    t:on_data(data(7, INGRESS, "A1", { ts_ns = 9000, offset = 0 }))
    t:on_data(data(7, EGRESS, "Q2", { ts_ns = 10000, offset = 2 }))
    assert.same({ 0, 1, 1, C.MR_NET_COUNT }, { #got.exchanges, asked, t:stats().hidden, got.verdicts[7] })
  end)

  it("reads requests on a server's connection and answers on its writes", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(ACCEPT, 8, { role = SERVER }))
    t:on_data(data(8, INGRESS, "Q", { role = SERVER }))
    t:on_data(data(8, EGRESS, "A", { role = SERVER }))
    assert.equal("server", got.exchanges[1].role)
  end)

  it("tells the role of a connection first seen mid-stream from what its bytes are", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(FOUND, 9, { role = UNKNOWN }))
    t:on_data(data(9, INGRESS, "Q", { role = UNKNOWN }))
    t:on_data(data(9, EGRESS, "A", { role = UNKNOWN }))
    assert.equal("server", got.exchanges[1].role)
  end)

  it("holds an exchange until the connection's addresses arrive, or a second at most", function()
    local t, got = new_tracer()
    t:on_data(data(10, EGRESS, "Q"))
    t:on_data(data(10, INGRESS, "A"))
    assert.equal(0, #got.exchanges)
    t:on_tcp_event(event(CONNECT, 10))
    assert.equal("10.0.0.2:80", got.exchanges[1].remote)
    t:on_data(data(11, EGRESS, "Q", { ts_ns = 1e9 }))
    t:on_data(data(11, INGRESS, "A", { ts_ns = 1e9 }))
    t:tick(1.5e9, true)
    assert.equal(1, #got.exchanges)
    t:tick(2.1e9, true)
    assert.equal(2, #got.exchanges)
    assert.is_nil(got.exchanges[2].remote)
    assert.equal(1, t:stats().held_too_long)
  end)

  it("leaves a connection no protocol knows to byte counting in the kernel", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 12))
    for i = 1, 4 do
      t:on_data(data(12, EGRESS, "zz", { offset = (i - 1) * 4 }))
      t:on_data(data(12, EGRESS, "zz", { offset = (i - 1) * 4 + 2 }))
      assert.same({}, got.verdicts)
      t:on_data(data(12, INGRESS, "zz", { offset = (i - 1) * 2 }))
    end
    assert.same({ [12] = 1 }, got.verdicts)
    assert.equal(1, t:stats().unclassified)
    t:on_data(data(12, EGRESS, "", { len = 1000, copied = 0, flags = C.MR_NET_COUNT_ONLY, offset = 16 }))
    t:on_tcp_event(event(CLOSE, 12, { bytes_sent = 500 }))
    t:tick(1e9, true)
    local close = got.events[#got.events]
    assert.same({ "close", 1016 }, { close.kind, close.bytes_sent })
  end)

  it("leaves a one-way stream no protocol knows to byte counting after 64 records", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 18))
    for i = 1, 63 do
      t:on_data(data(18, INGRESS, "zz", { offset = (i - 1) * 2 }))
    end
    assert.same({}, got.verdicts)
    t:on_data(data(18, INGRESS, "zz", { offset = 126 }))
    assert.same({ [18] = 1 }, got.verdicts)
  end)

  it("tells the parser about bytes it lost", function()
    local t = new_tracer()
    t:on_tcp_event(event(CONNECT, 13))
    t:on_data(data(13, EGRESS, "Q", { offset = 0 }))
    t:on_data(data(13, EGRESS, "Q", { offset = 50 }))
    assert.equal(1, t:stats().gaps)
  end)

  it("closes a connection once the data stream has passed its close, ending what is pending", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 14))
    t:on_data(data(14, EGRESS, "Q"))
    t:on_tcp_event(event(CLOSE, 14, { ts_ns = 3000, bytes_sent = 1, bytes_received = 0 }))
    -- data came since the last tick: more may be queued, written before the close
    t:tick(3000 + 100e6)
    assert.equal(0, #got.exchanges)
    -- none since: the queue has caught up
    t:tick(3000 + 300e6)
    assert.same({ "no response", 0 }, { got.exchanges[1].error, got.exchanges[1].status })
    assert.equal("close", got.events[#got.events].kind)
    assert.equal(0, t:stats().connections)
  end)

  it("keeps a connection's addresses when its close event no longer has the local port", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 17))
    t:on_data(data(17, EGRESS, "Q"))
    t:on_tcp_event(event(CLOSE, 17, { local_port = 0 }))
    t:on_data(data(17, INGRESS, "A"))
    assert.equal("10.0.0.1:40000", got.exchanges[1]["local"])
  end)

  it("keeps at most max_connections, evicting the least recently seen", function()
    local t = new_tracer({ max_connections = 10 })
    for id = 1, 11 do
      t:on_tcp_event(event(CONNECT, id, { ts_ns = id }))
    end
    assert.equal(1, t:stats().evicted)
    assert.equal(10, t:stats().connections)
  end)

  it("reports the totals of the connections that moved each progress period, the others every 5 minutes", function()
    local t, got = new_tracer({ progress_ns = 5e9 })
    t:on_tcp_event(event(CONNECT, 15))
    t:on_data(data(15, EGRESS, "Q12345"))
    t:tick(6e9, true)
    local ev = got.events[#got.events]
    assert.same({ "progress", 6, 0, 15 }, { ev.kind, ev.bytes_sent, ev.bytes_received, ev.conn })
    local before = #got.events
    t:tick(8e9, true)
    t:tick(12e9, true)
    assert.equal(before, #got.events) -- not moved since
    t:on_data(data(15, EGRESS, "Q1", { ts_ns = 13e9, offset = 6 }))
    t:tick(18e9, true)
    assert.same({ "progress", 8 }, { got.events[before + 1].kind, got.events[before + 1].bytes_sent })
    t:tick(200e9, true)
    assert.equal(before + 1, #got.events)
    t:tick(320e9, true)
    assert.same({ "progress", 8 }, { got.events[before + 2].kind, got.events[before + 2].bytes_sent })
  end)

  it("makes a bounded number of progress events per tick, carrying the rest over to the next ticks", function()
    local t, got = new_tracer({ progress_ns = 5e9 })
    for id = 1001, 6000 do
      t:on_data(data(id, EGRESS, "Q"))
    end
    local per_tick = {}
    for k = 1, 4 do
      local before = #got.events
      t:tick(6e9 + k * 100e6, true)
      per_tick[k] = #got.events - before
    end
    assert.same({ 2048, 2048, 904, 0 }, per_tick)
    local seen = {}
    for _, ev in ipairs(got.events) do
      seen[ev.conn] = ev.kind == "progress" or nil
    end
    for id = 1001, 6000 do
      assert.is_true(seen[id], id)
    end
  end)

  it("ends as closed an idle connection the kernel no longer follows, asking only after 30 s", function()
    local open = { [19] = true, [20] = true }
    local asked = {}
    local t, got = new_tracer({ conn_open = function(id)
      asked[#asked + 1] = id
      return open[id]
    end })
    t:on_tcp_event(event(CONNECT, 19))
    t:on_tcp_event(event(CONNECT, 20))
    t:tick(20e9, true)
    assert.same({}, asked)
    open[20] = nil
    t:tick(40e9, true)
    assert.same({ 19, 20 }, asked)
    local close = got.events[#got.events]
    assert.same({ "close", 20, true }, { close.kind, close.conn, close.expired })
    assert.same({ 1, 1 }, { t:stats().expired, t:stats().connections })
  end)

  it("finds a connection the kernel no longer follows behind more idle open ones than a tick looks up", function()
    local t = new_tracer({ conn_open = function(id) return id ~= 1601 end })
    for id = 1001, 1601 do
      t:on_tcp_event(event(CONNECT, id))
    end
    for k = 1, 3 do
      t:tick(40e9 + k * 100e6, true)
    end
    assert.same({ 1, 600 }, { t:stats().expired, t:stats().connections })
  end)

  it("ends a connection idle past expire_ns when it cannot ask the kernel", function()
    local t = new_tracer({ expire_ns = 60e9 })
    t:on_tcp_event(event(CONNECT, 21))
    t:tick(50e9, true)
    assert.equal(1, t:stats().connections)
    t:tick(70e9, true)
    assert.same({ 0, 1 }, { t:stats().connections, t:stats().expired })
  end)

  it("keeps whole addresses when a found event comes with port 0", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 22))
    t:on_tcp_event(event(FOUND, 22, { local_port = 0 }))
    t:on_data(data(22, EGRESS, "Q"))
    t:on_data(data(22, INGRESS, "A"))
    assert.equal("10.0.0.1:40000", got.exchanges[1]["local"])
  end)

  it("drops the parser's state of a connection idle and at rest, and makes a new one at its next bytes", function()
    local made = 0
    local rest = setmetatable({ new_state = function()
      made = made + 1
      return qa.new_state()
    end, at_rest = function(state)
      return #state.pending == 0
    end }, { __index = qa })
    local t, got = new_tracer({ protocols = { rest } })
    t:on_tcp_event(event(CONNECT, 23))
    t:on_data(data(23, EGRESS, "Q", { ts_ns = 1e9 }))
    t:on_data(data(23, INGRESS, "A", { ts_ns = 1e9 }))
    t:tick(4e9, true)
    t:on_data(data(23, EGRESS, "Q", { ts_ns = 5e9, offset = 1 }))
    t:on_data(data(23, INGRESS, "A", { ts_ns = 5e9, offset = 1 }))
    assert.same({ 2, 2 }, { made, #got.exchanges })
  end)

  it("sheds new connections while its memory is above the budget's high-water mark", function()
    local t, got = new_tracer({ memory_limit = collectgarbage("count") * 1024 })
    t:on_tcp_event(event(CONNECT, 24, { ts_ns = 1e9 }))
    t:tick(1e9, true)
    t:on_data(data(24, EGRESS, "Q", { ts_ns = 1e9 }))
    assert.same({ 1, C.MR_NET_COUNT }, { t:stats().shed, got.verdicts[24] })
    t:on_data(data(24, INGRESS, "A", { ts_ns = 1e9 }))
    assert.equal(0, #got.exchanges)
  end)

  it("hands its connections and their parsers' state to a new tracer (a hot reload)", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 16))
    t:on_data(data(16, EGRESS, "Q"))
    local state = t:state()
    local t2 = tracer.new({ protocols = { qa }, on_exchange = function(ex) got.exchanges[#got.exchanges + 1] = ex end },
      state)
    t2:on_data(data(16, INGRESS, "A"))
    assert.equal(1, #got.exchanges)
    assert.equal("10.0.0.2:80", got.exchanges[1].remote)
  end)

  it("hands over a connection no protocol knows, which stays counted only", function()
    local t, got = new_tracer()
    t:on_tcp_event(event(CONNECT, 17))
    for i = 1, 8 do
      t:on_data(data(17, i % 2 == 0 and INGRESS or EGRESS, "zz", { offset = 2 * math.floor((i - 1) / 2) }))
    end
    assert.same({ 1, 1 }, { t:stats().unclassified, got.verdicts[17] })
    local t2 = tracer.new({ protocols = { qa }, on_exchange = function(ex) got.exchanges[#got.exchanges + 1] = ex end },
      t:state())
    t2:on_data(data(17, EGRESS, "Q", { offset = 8 }))
    t2:on_data(data(17, INGRESS, "A", { offset = 8 }))
    assert.same({ 0, 1 }, { #got.exchanges, t2:stats().connections })
    assert.is_false(t2:state().conns[1].proto)
  end)
end)

describe("the network tracer's capture requests", function()
  -- A protocol whose requests ("Q") announce a body of 20000 bytes, which
  -- it asks not to be copied; pieces records what it was fed.
  local fed = {}
  local body = setmetatable({ name = "body" }, { __index = qa })
  function body.on_data(state, is_request, ptr, copied, total, ts, emit)
    fed[#fed + 1] = { ptr ~= nil, copied, total }
    qa.on_data(state, is_request, ptr, copied, total, ts, emit)
    if is_request and copied > 0 and ptr[0] == 81 then
      return 20000
    end
  end

  local function capture_tracer()
    fed = {}
    local asked = {}
    local t, got = new_tracer({ protocols = { body }, set_capture = function(conn, direction, skip_to)
      asked[#asked + 1] = { conn, direction, skip_to }
    end })
    t:on_tcp_event(event(CONNECT, 30))
    return t, got, asked
  end

  it("asks the kernel to skip a body from SKIP_MIN bytes on, at the record's end plus the body", function()
    local t, _, asked = capture_tracer()
    t:on_data(data(30, EGRESS, "Q", { offset = 100 }))
    assert.same({ { 30, EGRESS, 101 + 20000 } }, asked)
    local small = setmetatable({ on_data = function() return tracer.SKIP_MIN - 1 end }, { __index = body })
    local t2, _, asked2 = capture_tracer()
    t2.protocol_list[1] = small
    t2:on_data(data(30, EGRESS, "Q"))
    assert.same({}, asked2)
  end)

  it("feeds a record's skipped bytes as a piece without copy, then its copied bytes", function()
    local t = capture_tracer()
    t:on_data(data(30, EGRESS, "Q", { offset = 0 }))
    t:on_data(data(30, EGRESS, "Qz", { offset = 1, len = 20005, skipped = 20000, copied = 2 }))
    assert.same({ { true, 1, 1 }, { false, 0, 20000 }, { true, 2, 5 } }, fed)
  end)

  it("takes a jump of offsets within the asked skip for body bytes, one past it for a gap", function()
    local t = capture_tracer()
    t:on_data(data(30, EGRESS, "Q", { offset = 0 }))
    t:on_data(data(30, EGRESS, "z", { offset = 15000 }))
    assert.same({ false, 0, 14999 }, fed[2])
    assert.equal(0, t:stats().gaps)
    t:on_data(data(30, EGRESS, "z", { offset = 30000 }))
    assert.equal(1, t:stats().gaps)
  end)

  it("hands the asked skip over at a hot reload", function()
    local t = capture_tracer()
    t:on_data(data(30, EGRESS, "Q", { offset = 0 }))
    local t2 = tracer.new({ protocols = { body } }, t:state())
    t2:on_data(data(30, EGRESS, "z", { offset = 15000 }))
    assert.equal(0, t2:stats().gaps)
  end)
end)
