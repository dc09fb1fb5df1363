-- Specs for the HTTP/1 protocol module, from byte streams of real programs
-- (spec/fixtures/http1/*.cap: nginx, Python's servers, curl, wrk, raw
-- sockets, recorded by record_proxy.py) replayed as the tracer would, with
-- and without the kernel's 4096-byte copy cap; then the same streams cut,
-- split, shifted and damaged: starts mid-stream, heads over many records,
-- lost records, closes, idle connections.
local ffi = require("ffi")
local http1 = require("moonrover.net.protocols.http1")
local capture = require("fixtures.http1.capture")
local serialize = require("moonrover.lib.serialize")
local tables = require("support.tables")

local u8p = ffi.typeof("const uint8_t *")
local CAP = 4096 -- a copy smaller than the captures' longest records (the default copies them whole)
local LOCAL_HOST = "^127%.0%.0%.1:%d+$"

-- Feeds strings as records: list of { is_request, data, ts[, total] }.
local function feed(state, records, out)
  out = out or {}
  local function emit(ex)
    out[#out + 1] = ex
  end
  for _, r in ipairs(records) do
    local data = r[2]
    http1.on_data(state, r[1], ffi.cast(u8p, data), #data, r[4] or #data, r[3], emit)
  end
  return out
end

local function collector()
  local out = {}
  return out, function(ex)
    out[#out + 1] = ex
  end
end

-- Feeds records to a new state as the tracer would, copying at most cap bytes
-- of each (all when cap is nil), but for record number lost, which becomes a
-- gap; returns the state, the exchanges and their emit function.
local function replay_losing(records, lost, cap)
  local state = http1.new_state()
  local out, emit = collector()
  for k, rec in ipairs(records) do
    if k == lost then
      http1.on_gap(state, false)
    else
      local copied = math.min(cap or #rec.data, #rec.data)
      http1.on_data(state, rec.is_request, ffi.cast(u8p, rec.data), copied, #rec.data, rec.ts, emit)
    end
  end
  return state, out, emit
end

-- The sum of the sizes of records[from..to].
local function size(records, from, to)
  local n = 0
  for k = from, to or from do
    n = n + #records[k].data
  end
  return n
end

-- A sequential stream's turns: each a run of request records and the run of
-- response records after it, as { q = { first, last }, r = { first, last } }.
local function turns(records)
  local out = {}
  for k, rec in ipairs(records) do
    local t = out[#out]
    if rec.is_request then
      if not t or t.r then
        out[#out + 1] = { q = { k, k } }
      else
        t.q[2] = k
      end
    elseif t then
      t.r = t.r or { k, k }
      t.r[2] = k
    end
  end
  return out
end

-- Checks each exchange's times and sizes against the turns of records.
local function check_turns(exchanges, records)
  local t = turns(records)
  assert.same(#t, #exchanges)
  for k, ex in ipairs(exchanges) do
    local q, r = t[k].q, t[k].r
    assert.same({ records[q[1]].ts, records[q[2]].ts, size(records, q[1], q[2]) },
      { ex.request_start_ns, ex.request_end_ns, ex.request_bytes })
    assert.same({ records[r[1]].ts, records[r[2]].ts, size(records, r[1], r[2]) },
      { ex.response_start_ns, ex.response_end_ns, ex.response_bytes })
  end
end

local function targets(exchanges)
  return tables.pluck(exchanges, "target")
end

local function statuses(exchanges)
  return tables.pluck(exchanges, "status")
end

-- Each record split into pieces of at most n bytes (the same timestamp).
local function split(records, n)
  local out = {}
  for _, r in ipairs(records) do
    for k = 1, #r.data, n do
      out[#out + 1] = { is_request = r.is_request, ts = r.ts, data = r.data:sub(k, k + n - 1) }
    end
  end
  return out
end

local function slice(records, from, to)
  local out = {}
  for k = from, to or #records do
    out[#out + 1] = records[k]
  end
  return out
end

-- Replayed both whole and with the copy cap, the exchanges must agree.
local function both(name, opts)
  local records = capture.load(name)
  local whole = capture.replay(http1, records, opts)
  local capped_opts = { cap = CAP }
  for k, v in pairs(opts or {}) do
    capped_opts[k] = v
  end
  local capped = capture.replay(http1, records, capped_opts)
  assert.same(whole, capped)
  return whole, records
end

describe("http1 on real streams", function()
  it("pairs keep-alive GETs and reads their Host and trace headers", function()
    local ex, r = both("keepalive_nginx", { close = true })
    assert.same({ "/index.html", "/text.txt", "/index.html?q=1", "/missing" }, targets(ex))
    assert.same({ 200, 200, 200, 404 }, statuses(ex))
    for _, e in ipairs(ex) do
      assert.same("http", e.protocol)
      assert.same("GET", e.method)
      assert.same("1.1", e.version)
      assert.matches(LOCAL_HOST, e.host)
      assert.is_nil(e.error)
    end
    assert.same({ "traceparent", "4bf92f3577b34da6a3ce929d0e0e4736" }, { ex[1].trace_header, ex[1].trace_id })
    assert.same({ "sw8", "1f2d4bf47bf711eab794acde48001122" }, { ex[2].trace_header, ex[2].trace_id })
    assert.same({ "b3", "80f198ee56343ba864fe8b2a57d3eff7" }, { ex[3].trace_header, ex[3].trace_id })
    assert.same({ "x-b3-traceid", "463ac35c9f6413ad" }, { ex[4].trace_header, ex[4].trace_id })
    assert.same({ "4bf92f3577b34da6a3ce929d0e0e4736" }, { ex[1].trace_value:match("^00%-(%x+)%-") })
    assert.same({ "sw8", "1f2d4bf47bf711eab794acde48001123" }, { ex[2].trace_header,
      (require("moonrover.net.protocols.trace_context").sw8_span(ex[2].trace_value)) })
    check_turns(ex, r)
  end)

  it("reads HTTP/1.0 requests and responses with a length", function()
    local ex = both("http10_nginx", { close = true })
    assert.same(1, #ex)
    assert.same({ "GET", "1.0", 200 }, { ex[1].method, ex[1].version, ex[1].status })
    local first = both("python_file_server", { close = true })
    local second, r = both("python_file_server-2", { close = true })
    assert.same({ "/index.html", 200 }, { first[1].target, first[1].status })
    assert.same({ "/text.txt", 200 }, { second[1].target, second[1].status })
    check_turns(second, r)
  end)

  it("counts a POST body, plain or chunked", function()
    local ex, r = both("post_body", { close = true })
    assert.same({ "POST", "/echo", 200 }, { ex[1].method, ex[1].target, ex[1].status })
    check_turns(ex, r)
    local chunked, rc = both("post_chunked", { close = true })
    assert.same(200, chunked[1].status)
    check_turns(chunked, rc)
  end)

  it("does not take 100 Continue for the response", function()
    local ex, r = both("post_expect_continue", { close = true })
    assert.same(1, #ex)
    assert.same(200, ex[1].status)
    -- Without the 100 Continue record, request and response are one turn each.
    assert.matches("^HTTP/1.1 100 Continue\r\n\r\n$", r[2].data)
    table.remove(r, 2)
    check_turns(ex, r)
  end)

  it("follows chunked responses chunk by chunk, and a 204 without body", function()
    local ex, r = both("chunked_python", { close = true })
    assert.same({ "/chunked", "/chunked-big", "/nocontent", "/chunked" }, targets(ex))
    assert.same({ 200, 200, 204, 200 }, statuses(ex))
    check_turns(ex, r)
  end)

  it("knows where a chunked response ends whose size lines were not copied", function()
    local r = capture.load("chunked_nginx_gzip")
    assert.is_true(#r[#r].data > CAP)
    local ex, state = capture.replay(http1, r, { cap = CAP })
    -- The first ended where the second response visibly started; the
    -- second's end is known once the connection is idle.
    assert.same(1, #ex)
    local idle, emit = collector()
    http1.on_idle(state, r[#r].ts + 1e8, 2e8, emit)
    assert.same(0, #idle)
    http1.on_idle(state, r[#r].ts + 2e8, 2e8, emit)
    assert.same(1, #idle)
    ex[2] = idle[1]
    assert.same({ 200, 200 }, statuses(ex))
    assert.is_nil(idle[1].error)
    check_turns(ex, r)
    -- Copied whole, the chunks are followed to the end.
    local whole = capture.replay(http1, r)
    check_turns(whole, r)
  end)

  it("gives HEAD and 304 responses no body", function()
    local ex, r = both("head_then_get", { close = true })
    assert.same({ "HEAD", "GET" }, { ex[1].method, ex[2].method })
    assert.same({ 200, 200 }, statuses(ex))
    check_turns(ex, r)
    local nm = both("not_modified", { close = true })
    assert.same({ 304, 304 }, statuses(nm))
    assert.same({ "/index.html", "/text.txt" }, targets(nm))
  end)

  it("pairs pipelined requests in order", function()
    local ex, r = both("pipelined_raw", { close = true })
    assert.same({ "/index.html", "/missing", "/index.html" }, targets(ex))
    assert.same({ 200, 404, 200 }, statuses(ex))
    assert.same(size(r, 1), ex[1].request_bytes + ex[2].request_bytes + ex[3].request_bytes)
    assert.same(size(r, 2, #r), ex[1].response_bytes + ex[2].response_bytes + ex[3].response_bytes)
    assert.same({ r[1].ts, r[1].ts, r[2].ts },
      { ex[1].request_start_ns, ex[3].request_end_ns, ex[1].response_start_ns })
    assert.same(r[#r].ts, ex[3].response_end_ns)
    for _, e in ipairs(ex) do
      assert.same("pipelined", e.host)
    end
  end)

  it("pairs wrk's pipelined and keep-alive requests", function()
    local ex, r = both("pipelined_wrk")
    local requests = 0
    for _, rec in ipairs(r) do
      if rec.is_request then
        requests = requests + select(2, rec.data:gsub("GET ", ""))
      end
    end
    assert.is_true(requests >= 30)
    -- The capture stops mid-run: the last requests may have no response yet.
    assert.is_true(#ex >= requests - 3)
    for k, e in ipairs(ex) do
      assert.same("/index.html?n=" .. ((k - 1) % 3 + 1), e.target)
      assert.same(200, e.status)
      assert.same(853, e.response_bytes)
    end
    local ka = both("keepalive_wrk")
    assert.same(20, #ka)
    for _, e in ipairs(ka) do
      assert.same({ "/index.html", 200, 853 }, { e.target, e.status, e.response_bytes })
    end
  end)

  it("makes one response of 1 MiB copied 4096 bytes at a time", function()
    local ex, r = both("large_nginx", { close = true })
    assert.same(1, #ex)
    assert.is_true(ex[1].response_bytes > 1048576)
    check_turns(ex, r)
  end)

  it("ends a response without length at the close", function()
    local r = capture.load("until_close")
    assert.same({}, capture.replay(http1, r))
    local ex = both("until_close", { close = true })
    assert.same({ "1.1", 200 }, { ex[1].version, ex[1].status })
    assert.is_nil(ex[1].error)
    check_turns(ex, r)
  end)

  it("stops at a CONNECT tunnel", function()
    local ex = both("connect_tunnel", { close = true })
    assert.same(1, #ex)
    assert.same({ "CONNECT", 200 }, { ex[1].method, ex[1].status })
    assert.matches(LOCAL_HOST, ex[1].target)
  end)

  it("skips what is not HTTP and keeps the response", function()
    local ex = both("malformed_nginx", { close = true })
    assert.same(1, #ex)
    assert.same(400, ex[1].status)
    assert.is_nil(ex[1].method)
    assert.is_nil(ex[1].request_start_ns)
  end)
end)

describe("http1 on cut and damaged streams", function()
  it("gives the same exchanges when every record comes a byte at a time", function()
    local r = capture.load("keepalive_nginx")
    local whole = capture.replay(http1, r, { close = true })
    local bytewise = capture.replay(http1, split(r, 1), { close = true })
    assert.same(whole, bytewise)
    local chunked = capture.load("chunked_python")
    assert.same(capture.replay(http1, chunked, { close = true }),
      capture.replay(http1, split(chunked, 3), { close = true }))
  end)

  it("starts in the middle of a connection", function()
    local r = capture.load("keepalive_nginx")
    -- From the second response's second record (body bytes) on.
    local ex = capture.replay(http1, slice(r, 5), { close = true })
    assert.same({ "/index.html?q=1", "/missing" }, targets(ex))
    -- From the middle of the first request: its response has no request.
    local cut = slice(r, 1)
    cut[1] = { is_request = true, ts = r[1].ts, data = r[1].data:sub(30) }
    local from_mid = capture.replay(http1, cut, { close = true })
    assert.same({ 200, 200, 200, 404 }, statuses(from_mid))
    assert.is_nil(from_mid[1].method)
    assert.same("/text.txt", from_mid[2].target)
  end)

  it("resynchronises after a lost response record", function()
    local r = capture.load("keepalive_wrk")
    local _, out = replay_losing(r, 6)
    assert.same(20, #out)
    assert.same({ 0, "lost sync" }, { out[3].status, out[3].error })
    for k, e in ipairs(out) do
      if k ~= 3 then
        assert.same({ 200, r[2 * k - 1].ts, r[2 * k].ts }, { e.status, e.request_start_ns, e.response_end_ns })
        assert.is_nil(e.error)
      end
    end
  end)

  it("marks a response that lost a record in its middle", function()
    local r = capture.load("large_nginx")
    local state, out, emit = replay_losing(r, 6, CAP)
    assert.same(0, #out)
    http1.on_close(state, r[#r].ts + 1, emit)
    assert.same(1, #out)
    assert.same({ 200, "lost sync", r[#r].ts }, { out[1].status, out[1].error, out[1].response_end_ns })
    assert.same(size(r, 2, #r) - size(r, 6), out[1].response_bytes)
  end)

  it("says what the close cut off", function()
    local r = capture.load("large_nginx")
    local ex = capture.replay(http1, slice(r, 1, 5), { close = true, cap = CAP })
    assert.same(1, #ex)
    assert.same({ 200, "closed mid-response", size(r, 2, 5) }, { ex[1].status, ex[1].error, ex[1].response_bytes })
    local no_answer = capture.replay(http1, slice(r, 1, 1), { close = true })
    assert.same({ "/big.bin", 0, "no response" }, { no_answer[1].target, no_answer[1].status, no_answer[1].error })
    assert.is_nil(no_answer[1].response_start_ns)
    local head_cut = capture.load("keepalive_nginx")
    local partial = slice(head_cut, 1, 2)
    partial[2] = { is_request = false, ts = head_cut[2].ts, data = head_cut[2].data:sub(1, 40) }
    local cut = capture.replay(http1, partial, { close = true })
    assert.same({ "/index.html", 200, "closed mid-response", 40 },
      { cut[1].target, cut[1].status, cut[1].error, cut[1].response_bytes })
  end)

  it("keeps what a head cut by the copy shows, and finds the next message", function()
    local r = capture.load("keepalive_nginx")
    local state = http1.new_state()
    local out, emit = collector()
    for _, rec in ipairs(r) do
      local copied = rec.is_request and 10 or #rec.data
      http1.on_data(state, rec.is_request, ffi.cast(u8p, rec.data), copied, #rec.data, rec.ts, emit)
    end
    http1.on_close(state, r[#r].ts + 1, emit)
    -- "GET " and six bytes of target.
    assert.same({ "/index...", "/text....", "/index...", "/missi..." }, targets(out))
    assert.same({ 200, 200, 200, 404 }, statuses(out))
    assert.is_nil(out[1].host)
    check_turns(out, r)
    -- Cut after the target, it is whole.
    local whole = capture.replay(http1, r, { cap = 20, close = true })
    assert.same({ "/index.html", "/text.txt", "/index.html?q=1", "/missing" }, targets(whole))
  end)

  it("gives up on a head over 16 KiB and pairs its response", function()
    local r = capture.load("keepalive_wrk")
    local big = r[1].data:gsub("\r\n\r\n$", "\r\n" .. ("X-Filler: " .. ("f"):rep(990) .. "\r\n"):rep(20) .. "\r\n")
    local records = { { is_request = true, ts = 1, data = big } }
    for k = 2, 4 do
      records[#records + 1] = r[k]
    end
    local ex = capture.replay(http1, split(records, 1024), { close = true })
    assert.same(2, #ex)
    assert.same({ "/index.html", 200, #big, 1 },
      { ex[1].target, ex[1].status, ex[1].request_bytes, ex[1].request_start_ns })
    assert.same({ "/index.html", 200 }, { ex[2].target, ex[2].status })
  end)

  it("survives being serialized between any two records", function()
    local r = capture.load("chunked_python")
    local expected = capture.replay(http1, split(r, 7), { close = true })
    local state = http1.new_state()
    local out, emit = collector()
    for _, rec in ipairs(split(r, 7)) do
      state = assert(serialize.decode(serialize.encode(state)))
      http1.on_data(state, rec.is_request, ffi.cast(u8p, rec.data), #rec.data, #rec.data, rec.ts, emit)
    end
    http1.on_close(state, r[#r].ts + 1, emit)
    assert.same(expected, out)
  end)
end)

describe("http1 message rules", function()
  it("cuts long targets to 1024 characters", function()
    local target = "/" .. ("a"):rep(3000)
    local ex = feed(http1.new_state(), {
      { true, "GET " .. target .. " HTTP/1.1\r\nHost: h\r\n\r\n", 1 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 2 },
    })
    assert.same(1024, #ex[1].target)
    assert.same(target:sub(1, 1021) .. "...", ex[1].target)
  end)

  it("prefers sw8 to traceparent and reads header names in any case", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /t HTTP/1.1\r\nHOST:  h.example  \r\nTraceParent: 00-4bf92f3577b34da6a3ce929d0e0e4736-"
        .. "00f067aa0ba902b7-01\r\nSW8: 1-YS5iLmM=-x-1-x-x-x-x\r\nB3: 80f198ee56343ba8-e457b5a2e4d86bd1\r\n\r\n", 1 },
      { true, "GET /u HTTP/1.1\r\nb3: bad\r\nx-b3-traceid: 463ac35c9f6413ad\r\n\r\n", 2 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 3 },
    })
    assert.same({ "h.example", "sw8", "a.b.c" }, { ex[1].host, ex[1].trace_header, ex[1].trace_id })
    assert.same({ "x-b3-traceid", "463ac35c9f6413ad" }, { ex[2].trace_header, ex[2].trace_id })
  end)

  it("takes the first valid value of a repeated trace header", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /t HTTP/1.1\r\nsw8: bad\r\nb3: 80f198ee56343ba8-e457b5a2e4d86bd1\r\nSW8: worse\r\n"
        .. "sw8: 1-YS5iLmM=-x-1-x-x-x-x\r\nsw8: 1-ZC5lLmY=-x-1-x-x-x-x\r\n\r\n", 1 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 2 },
    })
    assert.same({ "sw8", "a.b.c" }, { ex[1].trace_header, ex[1].trace_id })
  end)

  it("reads a header only when every byte of its name matches", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /t HTTP/1.1\r\nHost: h\r\n\r\nGET /u HTTP/1.1\r\nHost: h\r\n\r\n", 1 },
      { false, "HTTP/1.1 200 OK\r\nTransfer_Encoding: chunked\r\nContent-Length: 2\r\n\r\nok"
        .. "HTTP/1.1 204 No Content\r\n\r\n", 2 },
    })
    assert.equal(2, #ex)
    assert.same({ "/t", 200, 68 }, { ex[1].target, ex[1].status, ex[1].response_bytes })
    assert.same({ "/u", 204 }, { ex[2].target, ex[2].status })
  end)

  it("ends the exchange at a 101 and parses nothing after it", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 1 },
      { false, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", 2 },
      { true, "GET /not-http HTTP/1.1\r\n\r\n", 3 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 4 },
    })
    assert.same(1, #ex)
    assert.same({ "/ws", 101 }, { ex[1].target, ex[1].status })
  end)

  it("skips 103 Early Hints and keeps blank lines between messages", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n\r\n", 1 },
      { false, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n", 2 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 3 },
      { true, "GET /b HTTP/1.1\nHost: h\n\n", 4 },
      { false, "HTTP/1.1 200\nContent-Length: 0\n\n", 5 },
    })
    assert.same({ "/a", "/b" }, targets(ex))
    assert.same({ 200, 200 }, statuses(ex))
    assert.same({ 3, 3 }, { ex[1].response_start_ns, ex[1].response_end_ns })
  end)

  it("closes on a half-received response head while the request is still open", function()
    local state = http1.new_state()
    local ex = feed(state, {
      { true, "POST /up HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789", 1 },
      { false, "HTTP/1.1 413 Payload Too La", 2 },
    })
    assert.same(0, #ex)
    local out, emit = collector()
    http1.on_close(state, 3, emit)
    assert.same(1, #out)
    assert.same({ "/up", 413, "closed mid-response", 1, 1, 52, 2, 2, 27 },
      { out[1].target, out[1].status, out[1].error, out[1].request_start_ns, out[1].request_end_ns,
        out[1].request_bytes, out[1].response_start_ns, out[1].response_end_ns, out[1].response_bytes })
  end)

  it("reads the final response after a 100 Continue whose head came in pieces", function()
    local ex = feed(http1.new_state(), {
      { true, "POST /up HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", 1 },
      { false, "HTTP/1.1 100 Cont", 2 },
      { false, "inue\r\n\r\n", 3 },
      { true, "ok", 4 },
      { false, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 5 },
    })
    assert.same(1, #ex)
    assert.same({ 201, 4, 5 }, { ex[1].status, ex[1].request_end_ns, ex[1].response_start_ns })
  end)

  it("pairs 100 pipelined requests read in two pieces, one split in its request line", function()
    local stream = {}
    for k = 1, 100 do
      stream[k] = "GET /" .. k .. " HTTP/1.1\r\nHost: x\r\n\r\n"
    end
    local text = table.concat(stream)
    local response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    local records = { { true, text:sub(1, 1024), 1 } }
    local read = math.floor(1024 / #stream[1])
    for k = 1, read do
      records[#records + 1] = { false, response, 1 + k }
    end
    records[#records + 1] = { true, text:sub(1025), 200 }
    for k = read + 1, 100 do
      records[#records + 1] = { false, response, 200 + k }
    end
    local ex = feed(http1.new_state(), records)
    assert.same(100, #ex)
    for k = 1, 100 do
      assert.same({ "/" .. k, 200 }, { ex[k].target, ex[k].status })
      assert.is_nil(ex[k].error)
    end
  end)

  it("says lost sync, not no response, for requests whose responses came in bytes not copied", function()
    local requests, responses = {}, {}
    for k = 1, 100 do
      requests[k] = "GET /" .. k .. " HTTP/1.1\r\n\r\n"
      responses[k] = "HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" .. ("x"):rep(200)
    end
    local reads = table.concat(responses)
    local state = http1.new_state()
    feed(state, { { true, table.concat(requests), 1 } })
    local out, emit = collector()
    http1.on_data(state, false, ffi.cast(u8p, reads), 4096, #reads, 2, emit)
    http1.on_close(state, 3, emit)
    local seen = math.floor(4096 / #responses[1])
    assert.same(100, #out)
    for k = 1, 100 do
      if k <= seen then
        assert.same({ "/" .. k, 200 }, { out[k].target, out[k].status })
        assert.is_nil(out[k].error)
      else
        assert.same({ "/" .. k, "lost sync" }, { out[k].target, out[k].error })
      end
    end
  end)

  it("says how much body follows that needs no copy, and takes it back as pieces with nothing copied", function()
    local state = http1.new_state()
    local out, emit = collector()
    local function data(is_request, s, ts, total)
      return http1.on_data(state, is_request, s and ffi.cast(u8p, s), s and #s or 0, total or #s, ts, emit)
    end
    assert.equal(0, data(true, "GET /big HTTP/1.1\r\n\r\n", 1))
    assert.is_false(http1.at_rest(state))
    local head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
    assert.equal(100000 - 10, data(false, head .. ("x"):rep(10), 2))
    assert.equal(100000 - 10 - 50000, data(false, nil, 3, 50000))
    assert.equal(0, data(false, nil, 4, 100000 - 10 - 50000))
    assert.same({ "/big", #head + 100000, 4 }, { out[1].target, out[1].response_bytes, out[1].response_end_ns })
    assert.is_true(http1.at_rest(state))
    assert.equal(0, data(true, "GET /chunks HTTP/1.1\r\n\r\n", 5))
    assert.equal(0x8000 - 4, data(false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000\r\nabcd", 6))
    assert.equal(0, data(false, nil, 7, 0x8000 - 4))
    assert.equal(0, data(false, "\r\n0\r\n\r\n", 8))
    assert.same({ "/chunks", 200, 8 }, { out[2].target, out[2].status, out[2].response_end_ns })
    assert.equal(0, data(true, "GET /close HTTP/1.0\r\n\r\n", 9))
    assert.equal(0, data(false, "HTTP/1.0 200 OK\r\n\r\nuntil the close", 10))
    assert.is_false(http1.at_rest(state))
  end)

  it("answers the requests past 256 waiting without their request, never pairing wrongly", function()
    local records = {}
    for k = 1, 300 do
      records[k] = { true, "GET /" .. k .. " HTTP/1.1\r\n\r\n", k }
    end
    for k = 1, 300 do
      local status = k % 2 == 0 and 200 or 404
      records[300 + k] = { false, "HTTP/1.1 " .. status .. " X\r\nContent-Length: 0\r\n\r\n", 300 + k }
    end
    records[601] = { true, "GET /after HTTP/1.1\r\n\r\n", 601 }
    records[602] = { false, "HTTP/1.1 204 No Content\r\n\r\n", 602 }
    local ex = feed(http1.new_state(), records)
    assert.same(301, #ex)
    for k = 1, 300 do
      assert.same({ k <= 256 and "/" .. k or nil, k % 2 == 0 and 200 or 404 }, { ex[k].target, ex[k].status })
      assert.is_nil(ex[k].error)
    end
    assert.same({ "/after", 204 }, { ex[301].target, ex[301].status })
  end)

  it("ends a body early at a record that starts a new message", function()
    local ex = feed(http1.new_state(), {
      { true, "GET /a HTTP/1.1\r\n\r\n", 1 },
      { false, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", 2 },
      { true, "GET /b HTTP/1.1\r\n\r\n", 3 },
      { false, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 4 },
    })
    assert.same({ "/a", "/b" }, targets(ex))
    assert.same({ 2, 4 }, { ex[1].response_end_ns, ex[2].response_end_ns })
  end)

  it("detects requests and responses by their first bytes", function()
    local function detect(s, is_request)
      return http1.detect(ffi.cast(u8p, s), #s, is_request)
    end
    for _, rec in ipairs(capture.load("keepalive_nginx")) do
      if rec.data:find("^[GH]") then
        assert.is_true(detect(rec.data, rec.is_request))
        assert.is_false(detect(rec.data, not rec.is_request))
      end
    end
    assert.is_true(detect("DELETE /x", true))
    assert.is_true(detect("HTTP/1.0 404 ", false))
    assert.is_false(detect("GE", true))
    assert.is_false(detect("GET  /x HTTP/1.1\r\n", true))
    assert.is_false(detect("GET / HTTP/2.0\r\n", true))
    assert.is_false(detect("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true))
    assert.is_false(detect("HTTP/2 200 ", false))
    assert.is_false(detect("HTTP/1.1 2x0 OK", false))
    assert.is_false(detect("", true))
  end)
end)
