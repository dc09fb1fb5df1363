-- Specs for the runtime's HTTP/1 head scan (runtime/netparse/http1_scan.c),
-- which net/protocols/http1.lua calls once per head through rt.lock_free:
-- what it finds in a head, where it stops, and that it never reads at or
-- past n (each head is placed at the very end of guarded memory).
local rt = require("moonrover.rt").with_test_api()

local ffi, lib = rt.ffi, rt.lib
local scan_head = rt.lock_free("mr_http1_scan_head")
local scan_next = rt.lock_free("mr_http1_scan_next")
local scan_line_end = rt.lock_free("mr_http1_scan_line_end")

local guard = ffi.gc(assert(rt.call(lib.mr_guarded_buffer_new, 65536)), lib.mr_guarded_buffer_free)
local capacity = tonumber(lib.mr_guarded_buffer_capacity(guard))

-- s copied to the end of guarded memory: its address (a read past it faults).
local function at_end(s)
  local p = lib.mr_guarded_buffer_data(guard) + capacity - #s
  ffi.copy(p, s, #s)
  return p
end

local function value(p, from, to)
  return from >= 0 and ffi.string(p + from, to - from) or nil
end

-- Scans s (from the index `from`) and returns what was found as a table.
local function scan(s, from, is_request)
  local p = at_end(s)
  local h = ffi.new("struct mr_http1_head")
  scan_head(p, from, #s, is_request and 1 or 0, h)
  local traces = {}
  for k = 0, lib.MR_HTTP1_TRACES - 1 do
    traces[k + 1] = value(p, h.trace[k], h.trace_end[k]) or false
  end
  return {
    e = h["end"], line_end = h.line_end, length = tonumber(h.length), coding = h.coding,
    host = value(p, h.host, h.host_end), traces = traces,
  }, h, p
end

describe("mr_http1_scan_head", function()
  it("finds the blank line and the headers a request is read for", function()
    local s = "GET /x HTTP/1.1\r\nHOST:  a.example \t\r\nContent-Length: 12\r\nX-Other: 1\r\n"
      .. "Transfer-Encoding: gzip, Chunked\r\nb3: x\r\nsw8:y\nsw8: second\r\n\r\nbody"
    local r = scan(s, 4, true)
    assert.equal(#s - 4, r.e)
    assert.equal(16, r.line_end)
    assert.same({ "a.example", 12, 1 }, { r.host, r.length, r.coding })
    assert.same({ "y", false, "x", false }, r.traces)
  end)

  it("reads only the body headers of a response", function()
    local s = "HTTP/1.1 200 OK\nHost: h\nsw8: y\ncontent-length: 7\ntransfer-encoding: gzip\n\nbody"
    local r = scan(s, 11, false)
    assert.same({ nil, 7, 2, { false, false, false, false } }, { r.host, r.length, r.coding, r.traces })
    assert.equal(#s - 4, r.e)
  end)

  it("marks bad and conflicting lengths, and takes the last coding", function()
    local bad = { "", "1x", "1234567890123456", "5\r\nContent-Length: 6" }
    for _, v in ipairs(bad) do
      assert.equal(-2, scan("HTTP/1.1 200 OK\r\nContent-Length: " .. v .. "\r\n\r\n", 11, false).length, v)
    end
    assert.equal(5, scan("HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length:5\r\n\r\n", 11, false).length)
    local r = scan("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: xchunked\r\n\r\n", 11, false)
    assert.equal(2, r.coding)
  end)

  it("says incomplete until the blank line, and keeps the complete lines' headers", function()
    local s = "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
    for n = 1, #s - 1 do
      local r = scan(s:sub(1, n), 4, true)
      assert.equal(lib.MR_HTTP1_INCOMPLETE, r.e, n)
      assert.equal(n >= 16 and 15 or -1, r.line_end, n)
      assert.equal(n >= 25 and "a" or nil, r.host, n)
    end
    assert.equal(#s, scan(s, 4, true).e)
  end)

  it("says malformed for a line that starts with CR and is not CR LF", function()
    assert.equal(lib.MR_HTTP1_MALFORMED, scan("HTTP/1.1 200 OK\r\n\rX\r\n\r\n", 11, false).e)
    assert.equal(lib.MR_HTTP1_INCOMPLETE, scan("HTTP/1.1 200 OK\r\n\rX", 11, false).e)
  end)

  it("finds the later headers of one trace name", function()
    local s = "GET / HTTP/1.1\r\ntraceparent: a\r\nb3: b\r\nTraceparent:  c \r\ntraceparent: d\r\n\r\n"
    local r, h, p = scan(s, 4, true)
    assert.equal("a", r.traces[2])
    local tp = lib.MR_HTTP1_TRACEPARENT
    assert.is_true(scan_next(p, h.trace_next[tp], #s, tp, h) >= 0)
    assert.equal("c", value(p, h.trace[tp], h.trace_end[tp]))
    assert.is_true(scan_next(p, h.trace_next[tp], #s, tp, h) >= 0)
    assert.equal("d", value(p, h.trace[tp], h.trace_end[tp]))
    assert.equal(-1, scan_next(p, h.trace_next[tp], #s, tp, h))
    assert.equal(-1, h.trace[tp])
    assert.equal(-1, scan_next(p, 0, #s, lib.MR_HTTP1_TRACES, h))
  end)

  it("finds line ends only before n", function()
    local p = at_end("ab\ncd")
    assert.same({ 2, 5, 5, 5 }, { scan_line_end(p, 0, 5), scan_line_end(p, 3, 5), scan_line_end(p, 5, 5),
      scan_line_end(p, 6, 5) })
  end)

  it("reads nothing at or past n, whatever the bytes", function()
    local s = "GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\nsw8: x\r\nb3: y\r\n\r\n"
    math.randomseed(7)
    for _ = 1, 20000 do
      local n = math.random(1, #s)
      local bytes = {}
      for k = 1, n do
        local c = s:byte(k)
        bytes[k] = math.random(8) == 1 and math.random(0, 255) or c
      end
      local cut = string.char(unpack(bytes))
      for is_request = 0, 1 do
        local p = at_end(cut)
        local h = ffi.new("struct mr_http1_head")
        scan_head(p, 0, n, is_request, h)
        assert.is_true(h["end"] <= n)
        for k = 0, lib.MR_HTTP1_TRACES - 1 do
          while h.trace[k] >= 0 do
            assert.is_true(h.trace_end[k] <= n)
            scan_next(p, h.trace_next[k], n, k, h)
          end
        end
      end
    end
  end)
end)

describe("rt.lock_free", function()
  it("gives only the functions that never lock, unbracketed even in a script's state", function()
    package.loaded["moonrover.script_context"] = { name = "spec" }
    local ok, f = pcall(rt.lock_free, "mr_http1_scan_line_end")
    package.loaded["moonrover.script_context"] = nil
    assert.is_true(ok)
    assert.equal("cdata", type(f))
    assert.has_error(function() rt.lock_free("mr_sys_monotonic_ns") end,
      "rt.lock_free: mr_sys_monotonic_ns is not a lock-free runtime function")
  end)
end)
