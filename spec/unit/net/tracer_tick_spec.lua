-- tracer_tick_spec.lua - when the tracer takes its data stream for caught
-- up (a tick with nothing fed since the last one), and so acts on a close
-- whose records may still be queued: never on its first tick (a hot reload
-- held the agent's loop, and the records that came meanwhile are queued),
-- nor on a tick long after the last one. Replayed records, and a protocol
-- made up for the spec: a request is a record starting with "Q", a response
-- one starting with "A", each response ends the oldest request.
local C = require("moonrover.consts")
local ffi = require("ffi")
local serialize = require("moonrover.lib.serialize")
local tcp_events = require("support.tcp_events")
local tracer = require("moonrover.net.tracer")

local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local CONNECT, CLOSE = C.MR_TCP_CONNECT, C.MR_TCP_CLOSE

local qa = { name = "qa" }
function qa.detect(ptr, len, is_request)
  return len > 0 and ptr[0] == (is_request and 81 or 65)
end
function qa.new_state()
  return { pending = {} }
end
function qa.on_data(state, is_request, _, copied, _, ts, emit)
  if is_request and copied > 0 then
    state.pending[#state.pending + 1] = { request_start_ns = ts }
  elseif copied > 0 and #state.pending > 0 then
    local ex = table.remove(state.pending, 1)
    ex.status, ex.response_end_ns = 200, ts
    emit(ex)
  end
end
function qa.on_gap() end
function qa.on_close(state, _, emit)
  for _, ex in ipairs(state.pending) do
    ex.status, ex.error = 0, "no response"
    emit(ex)
  end
  state.pending = {}
end

local event = tcp_events.maker("10.0.0.1:40000", "10.0.0.2:80", 250000)
local SECOND = 1e9

local texts = {} -- the payloads, kept alive while their pointers are used
local function record(direction, text, ts, offset)
  texts[#texts + 1] = text
  return { conn = 7, direction = direction, ts_ns = ts, pid = 42, role = C.MR_ROLE_CLIENT, len = #text,
    copied = #text, offset = offset, flags = 0 }, ffi.cast("const uint8_t *", text)
end

local function new_tracer(got, from)
  return tracer.new({
    protocols = { qa },
    on_exchange = function(ex) got.exchanges[#got.exchanges + 1] = ex end,
    on_conn_event = function(ev) got.events[#got.events + 1] = ev.kind end,
  }, from)
end

-- A client connection at 10 s: its request, its close event (the events'
-- queue runs ahead of the data's), not yet the response it read before.
local function open_with_close_pending(t)
  t:on_tcp_event(event(CONNECT, 7, { ts_ns = 10 * SECOND }))
  t:on_data(record(EGRESS, "Q1", 10 * SECOND + 1e6, 0))
  t:on_tcp_event(event(CLOSE, 7, { ts_ns = 10 * SECOND + 3e6, bytes_sent = 2, bytes_received = 2 }))
end

-- The exchanges as { status, error, remote address }.
local function summary(got)
  local list = {}
  for i, ex in ipairs(got.exchanges) do
    list[i] = { ex.status, ex.error or false, ex.remote or false }
  end
  return list
end

describe("the network tracer's ticks", function()
  it("after a hot reload, waits for the records queued meanwhile before it acts on a close", function()
    local old = new_tracer({ exchanges = {}, events = {} })
    open_with_close_pending(old)
    old:tick(10 * SECOND + 50e6)
    local got = { exchanges = {}, events = {} }
    -- the reload took a second; the response read before the close is still queued
    local t = new_tracer(got, assert(serialize.decode(serialize.encode(old:state()))))
    t:tick(11 * SECOND + 50e6)
    assert.same({}, got.exchanges)
    assert.equal(1, t:stats().connections)
    t:on_data(record(INGRESS, "A1", 10 * SECOND + 2e6, 0))
    t:tick(11 * SECOND + 150e6)
    t:tick(11 * SECOND + 250e6)
    assert.same({ { 200, false, "10.0.0.2:80" } }, summary(got))
    assert.same({ "close" }, got.events)
    assert.equal(0, t:stats().connections)
  end)

  it("takes a tick long after the last one, with nothing fed between, for a loop held up", function()
    local got = { exchanges = {}, events = {} }
    local t = new_tracer(got)
    open_with_close_pending(t)
    t:tick(10 * SECOND + 50e6)
    t:tick(11 * SECOND)
    assert.same({}, got.exchanges)
    t:on_data(record(INGRESS, "A1", 10 * SECOND + 2e6, 0))
    t:tick(11 * SECOND + 100e6)
    t:tick(11 * SECOND + 200e6)
    assert.same({ { 200, false, "10.0.0.2:80" } }, summary(got))
    assert.same({ "connect", "close" }, got.events)
  end)

  it("still ends a connection whose response never comes once ticks in a row saw nothing", function()
    local got = { exchanges = {}, events = {} }
    local t = new_tracer(got)
    open_with_close_pending(t)
    t:tick(10 * SECOND + 50e6)
    t:tick(10 * SECOND + 150e6)
    t:tick(10 * SECOND + 250e6)
    assert.same({ { 0, "no response", "10.0.0.2:80" } }, summary(got))
    assert.equal(0, t:stats().connections)
  end)
end)
