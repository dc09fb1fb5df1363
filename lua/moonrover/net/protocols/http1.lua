-- http1.lua - the HTTP/1.0 and HTTP/1.1 protocol module of the network
-- tracer: turns the captured records of one connection (both directions)
-- into exchanges, a request and its response each. It has the interface of
-- every module of lua/moonrover/net/protocols/ (name, detect, new_state,
-- on_data, on_gap, on_idle, on_close, at_rest) and emits the tracer's
-- exchange tables. Of the runtime it calls only the lock-free head scan
-- (below). on_data returns the bytes of body that follow the piece and need
-- no copy (Content-Length, chunk data; 0 for a body until the close): the
-- tracer asks the kernel to count them only, and feeds them back as pieces
-- with nothing copied.
--
-- What is recognised
-- - A request starts with one of GET POST PUT DELETE HEAD OPTIONS PATCH
--   CONNECT TRACE, a space, a target, a space, "HTTP/1.<digit>" and a line
--   end (CRLF or a bare LF, here and between headers). A response starts
--   with "HTTP/1.<digit> <3 digits>" then a space or a line end. Blank lines
--   before a message are skipped. Header names match in any case.
-- - Kept: method, target (at most 1024 characters: a longer one, or one cut
--   by the capture, keeps its first 1021 and gets "..."), version (the
--   request's, else the response's), status, Host (at most 256 bytes), and
--   a trace id from sw8, traceparent, b3 or x-b3-traceid (the first valid
--   one in that order: SkyWalking's backend knows traces by sw8's id; see
--   trace_context.lua), with the name of its header.
-- - Body length, as RFC 9112 says: none after a request to HEAD, nor in a
--   1xx, 204 or 304 response; else Transfer-Encoding whose last coding is
--   chunked (chunk sizes, extensions and trailers followed); else
--   Content-Length; else none for a request, and for a response all until
--   the connection closes. A message with a bad Content-Length, or a
--   request with another coding, has a body of unknown end (below). An
--   interim 1xx response (100 Continue, 103 Early Hints) is skipped, not
--   timed nor counted: the final response after it is the one paired. A
--   101 response, or a 2xx one to CONNECT, ends its exchange, and the
--   connection is not parsed any more (what follows is another protocol or
--   a tunnel).
-- - Responses pair with requests in order (FIFO): keep-alive connections and
--   pipelined requests pair right. Times: request_start_ns is the time of
--   the record where the request starts, request_end_ns of the one where it
--   ends; the same for the response. Sizes count every byte of the message,
--   head and body, with each record's total, copied or not: a 1 MiB
--   response copied 4096 bytes at a time is one response of 1 MiB. What is
--   skipped between messages counts for none.
--
-- Where a message ends when bytes are missing
-- - A head whose record ends before its blank line waits for the next
--   record (16 KiB at most).
-- - Content-Length: exactly, whatever was copied.
-- - Chunked: exactly while every chunk-size line lies in copied bytes. When
--   one falls in bytes not copied (or is malformed), the end is no longer
--   known: the message goes on until a record whose copied bytes end with
--   the last chunk ("0" CRLF CRLF), a record that starts like a new message
--   of its direction, on_idle (ending at its last record) or on_close.
-- - A head cut by the copy (copied < total before its blank line), or over
--   16 KiB: what it shows is kept (a target cut there gets "..."), and the
--   message's end is unknown, as just above.
-- - In a Content-Length or chunked body, a record that starts like a new
--   message of its direction ends the message before it, with the bytes
--   seen (so a body sent by sendfile and not captured costs one exchange's
--   size, not the pairing of all that follow).
-- - error = "lost sync": a whole record of the exchange was lost (on_gap
--   while its request or response was under way), so its size and end are
--   guesses; or its response was lost: after a gap in responses, on a
--   connection never seen pipelining, a response pairs with the newest
--   waiting request and the older ones are given up with this error and
--   status 0; or a response record was copied in part where the end of its
--   response was not known (a head cut by the copy, a chunk size not
--   copied) while more requests waited: the bytes not seen may hold their
--   responses, so the response under way, those that follow until no
--   request waits, and the requests given up at the close say this error
--   (not "no response"). An exchange whose end had to be found as above
--   carries no error: its times are those of its records.
-- - error = "no response" (status 0): the connection closed before its
--   response. error = "closed mid-response": the close came
--   before the response's end (a response that lasts until the close, or
--   whose end was unknown, ends there without error).
-- - The two directions' records come in order each, but not always in
--   order between them: the kernel puts a read and a write into one ring in
--   the order they reach it, so a client whose reader and writer are two
--   threads (Go's, async runtimes) can show a response before the request
--   it answers. A response that starts with no request waiting is taken for
--   such a one: a request whose first record is not newer than the
--   response's last record (kernel times, taken as the bytes moved) joins
--   it. A complete one is held (not emitted) until then, and at most until
--   the next response starts, a later request starts, on_idle finds it
--   idle_ns old, or on_close.
-- - A response whose request was not seen (the connection was first traced
--   mid-stream, or the request's record was lost) is emitted, once held as
--   just above, as an exchange without method, target, host or request
--   fields (request times and size nil, so no duration): its status,
--   response times and size are right.
--
-- Resynchronisation and limits
-- - At the start (the first bytes may be the middle of a message), after a
--   gap, and after anything not understood, bytes are skipped until a record
--   that starts like a message of its direction. Skipped response bytes
--   count as a gap for the pairing.
-- - Per connection: one partial head of at most 16 KiB per direction, at
--   most 256 requests waiting for their response (a server reading a deep
--   pipeline takes in one read all the requests of its buffer: nginx 8 KiB,
--   over 100 short GETs). The requests past them are only counted, in
--   order: each gets its response as an exchange without its request's
--   fields (as when the request was not seen), so that no response is paired
--   with the wrong request. Strings are made only for
--   method, target, Host and trace headers. The state is plain data (it
--   survives serialization across a reload). Never raises; never reads a
--   byte at or past `copied` (spec/integration/http1_fuzz_spec.lua checks
--   it on guarded memory).
-- - Speed: the per-message path runs no Lua loop. A head's line ends and
--   the headers read are found by one call of the runtime's
--   mr_http1_scan_head (runtime/netparse/http1_scan.c, through rt.lock_free):
--   LuaJIT never compiles a loop of a few iterations left from inside, and
--   every trace that reaches one aborts. Start lines are checked here with
--   word compares (scripts/bench/http1_parse.lua measures it).
local ffi = require("ffi")
local bit = require("bit")
local rt = require("moonrover.rt")
local trace_context = require("moonrover.net.protocols.trace_context")
local exchange = require("moonrover.net.exchange")

local _M = {}

_M.name = "http"

local band = bit.band
local byte = string.byte
local cast, ffi_string = ffi.cast, ffi.string
local remove, concat = table.remove, table.concat
local u8p = ffi.typeof("const uint8_t *")
local u32p = ffi.typeof("const uint32_t *")
local u64p = ffi.typeof("const uint64_t *")

local HEAD_LIMIT = 16384
local TARGET_MAX = 1024
local HOST_MAX = 256
local TRACE_VALUE_MAX = 512
local PENDING_MAX = 256

local HT, LF, CR, SP, DIGIT0, DIGIT9 = 9, 10, 13, 32, 48, 57

-- Direction modes.
local START = 0 -- a message starts at the next byte
local HEAD = 1  -- a head is buffered in parts, waiting for its end
local BODY = 2  -- `left` bytes of body to go (Content-Length)
local CHUNK = 3 -- in a chunked body (state in cst, csz, left)
local CLOSE = 4 -- the body lasts until the connection closes
local LOST = 5  -- the message's end is unknown
local SYNC = 6  -- skipping until a record starts like a message

-- Chunked body states.
local CS_SIZE = 0          -- in the chunk-size digits
local CS_EXT = 1           -- after the size: extensions, then the line end
local CS_DATA = 2          -- `left` bytes of chunk data to go
local CS_DATA_END = 3      -- the line end after chunk data
local CS_TRAILER = 4       -- at the start of a trailer line (or the final blank line)
local CS_TRAILER_CR = 5    -- a CR at the start of a trailer line
local CS_TRAILER_LINE = 6  -- inside a trailer line

-- Results of a message-start check on visible bytes.
local NO, YES, MAYBE = 0, 1, 2

-- parse_head's results other than the end offset.
local INCOMPLETE, MALFORMED = -1, -2

local METHOD_NAMES = { "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE" }
local METHODS_BY_FIRST = {}
for _, m in ipairs(METHOD_NAMES) do
  local first = byte(m)
  METHODS_BY_FIRST[first] = METHODS_BY_FIRST[first] or {}
  local list = METHODS_BY_FIRST[first]
  list[#list + 1] = m
end

local VERSIONS = {}
for d = 0, 9 do
  VERSIONS[DIGIT0 + d] = "1." .. d
end

local HEX = {}
for d = 0, 9 do
  HEX[DIGIT0 + d] = d
end
for d = 0, 5 do
  HEX[byte("a") + d] = 10 + d
  HEX[byte("A") + d] = 10 + d
end

-- Words: 8 bytes read at once where at least 8 are visible (x86-64 and
-- arm64 load them unaligned). Constants are built from bytes in memory
-- order, so they compare right whatever the byte order.
local function word(s)
  local b = ffi.new("uint8_t[8]")
  ffi.copy(b, s, #s < 8 and #s or 8)
  return cast(u64p, b)[0]
end
local function low_bytes(len)
  return word(("\255"):rep(len))
end
local function load8(p, i)
  return cast(u64p, p + i)[0]
end
local HTTP1_WORD, HTTP1_MASK = word("HTTP/1."), low_bytes(7)

-- Requests by their first four bytes: the method, and the word of the
-- method and its space with the mask of their bytes.
local METHODS_BY_WORD = {}
for _, m in ipairs(METHOD_NAMES) do
  local b = ffi.new("uint8_t[4]")
  ffi.copy(b, m .. " ", 4)
  METHODS_BY_WORD[cast(u32p, b)[0]] = { name = m, len = #m, word = word(m .. " "), mask = low_bytes(#m + 1) }
end

-- The head scan (runtime/netparse/http1_scan.c), its result, and the trace
-- headers in the order of its indexes (trace_context's, best first).
local scan_head = rt.lock_free("mr_http1_scan_head")
local scan_next = rt.lock_free("mr_http1_scan_next")
local scan_line_end = rt.lock_free("mr_http1_scan_line_end")
local S = ffi.new("struct mr_http1_head")
local TRACE_NAMES = trace_context.HEADERS
assert(#TRACE_NAMES == rt.lib.MR_HTTP1_TRACES, "http1: trace_context.HEADERS and api.h's trace headers differ")

-- What parse_head found, reused from head to head (Lua runs one call at a
-- time); false for what it did not find. length: -1 none, -2 invalid.
-- coding: 0 none, 1 chunked, 2 other. Its keys are always present (false,
-- never nil): storing nil into a key that a table lacks makes LuaJIT rehash
-- the table, at every store.
local H = {
  method = false, target = false, version = false, status = false, host = false,
  length = -1, coding = 0, trace_id = false, trace_header = false, trace_value = false,
}

local function reset_head()
  H.method, H.target, H.version, H.status, H.host = false, false, false, false, false
  H.length, H.coding = -1, 0
  H.trace_id, H.trace_header, H.trace_value = false, false, false
end

local function is_digit(c)
  return c >= DIGIT0 and c <= DIGIT9
end

-- The hot path (a head in one record) runs no loop: the head scan finds the
-- line ends and headers, and the start lines are checked with words. The
-- loops below the "slow" marks run only near the end of what is visible,
-- or for a trace header whose first value is not valid.

-- ---------------------------------------------------------- start lines

-- Slow: the method at p[0..n) when fewer than 8 bytes are visible: the
-- method and YES, nil and MAYBE while what is visible is a prefix of a
-- method and its space, else nil and NO.
local function method_at(p, n)
  if n <= 0 then
    return nil, MAYBE
  end
  local list = METHODS_BY_FIRST[p[0]]
  if not list then
    return nil, NO
  end
  local maybe = false
  for k = 1, #list do
    local m = list[k]
    local len = #m
    local j = 1
    while j < len and j < n and p[j] == byte(m, j + 1) do
      j = j + 1
    end
    if j == len then
      if len >= n then
        maybe = true
      elseif p[len] == SP then
        return m, YES
      end
    elseif j >= n then
      maybe = true
    end
  end
  return nil, maybe and MAYBE or NO
end

-- The method at p[i]: sets H.method and returns the index of the target,
-- or INCOMPLETE / MALFORMED.
local function request_method(p, i, n)
  if n - i >= 8 then
    local m = METHODS_BY_WORD[cast(u32p, p + i)[0]]
    if m and band(load8(p, i), m.mask) == m.word then
      H.method = m.name
      return i + m.len + 1
    end
    return MALFORMED
  end
  local m, seen = method_at(p + i, n - i)
  if seen == YES then
    H.method = m
    return i + #m + 1
  end
  return seen == NO and MALFORMED or INCOMPLETE
end

local function make_target(p, from, len, cut)
  if len > TARGET_MAX or cut then
    return ffi_string(p + from, len < TARGET_MAX - 3 and len or TARGET_MAX - 3) .. "..."
  end
  return ffi_string(p + from, len)
end

-- The rest of a request line, from its target at p[from] to its LF at p[lf]:
-- target, a space, "HTTP/1.<digit>", an optional CR. Sets H.target and
-- H.version; false when it is not such a line.
local function request_rest(p, from, lf)
  local stop = lf
  if stop > from and p[stop - 1] == CR then
    stop = stop - 1
  end
  local v = stop - 9
  if v <= from or p[from] <= SP or p[v] ~= SP then
    return false
  end
  local d = p[stop - 1]
  if band(load8(p, v + 1), HTTP1_MASK) ~= HTTP1_WORD or not is_digit(d) then
    return false
  end
  H.target = make_target(p, from, v - from, false)
  H.version = VERSIONS[d]
  return true
end

-- Slow: a request line whose end is not visible: its target up to the
-- space, or all that is visible of it, marked as cut.
local function partial_target(p, from, n)
  local k = from
  while k < n and p[k] ~= SP do
    k = k + 1
  end
  H.target = make_target(p, from, k - from, k >= n)
end

-- Slow: fewer than 13 bytes of a status line visible: INCOMPLETE while they
-- fit "HTTP/1.<digit> <3 digits>", else MALFORMED.
local function status_prefix(p, i, n)
  local pattern = "HTTP/1.d ddd"
  for k = 1, n - i < #pattern and n - i or #pattern do
    local c, want = p[i + k - 1], byte(pattern, k)
    if want == 100 then
      if not is_digit(c) then
        return MALFORMED
      end
    elseif c ~= want then
      return MALFORMED
    end
  end
  return INCOMPLETE
end

-- The status line at p[i]: sets H.version and H.status and returns the
-- index of the status's last digit, or INCOMPLETE / MALFORMED.
local function status_code(p, i, n)
  if n - i < 13 then
    return status_prefix(p, i, n)
  end
  if band(load8(p, i), HTTP1_MASK) ~= HTTP1_WORD then
    return MALFORMED
  end
  local v, a, b, c, after = p[i + 7], p[i + 9], p[i + 10], p[i + 11], p[i + 12]
  if not (is_digit(v) and p[i + 8] == SP and is_digit(a) and is_digit(b) and is_digit(c)) then
    return MALFORMED
  end
  if after ~= SP and after ~= CR and after ~= LF then
    return MALFORMED
  end
  H.version = VERSIONS[v]
  H.status = (a - DIGIT0) * 100 + (b - DIGIT0) * 10 + (c - DIGIT0)
  return i + 11
end

-- ---------------------------------------------------------------- headers

-- Whether the trace header k (0: the best) that S points to has a valid
-- trace id: it then goes into H.
local function take_trace(p, k)
  local from = S.trace[k]
  local len = S.trace_end[k] - from
  if len > TRACE_VALUE_MAX then
    return false
  end
  local name = TRACE_NAMES[k + 1]
  local value = ffi_string(p + from, len)
  local id = trace_context.BY_HEADER[name](value)
  if not id then
    return false
  end
  H.trace_id, H.trace_header, H.trace_value = id, name, value
  return true
end

-- Slow: the later headers named as trace header k, when its first one had
-- no valid id.
local function later_trace(p, n, k)
  while scan_next(p, S.trace_next[k], n, k, S) >= 0 do
    if take_trace(p, k) then
      return true
    end
  end
  return false
end

-- Whether a header named as trace header k has a valid id (the first such).
local function trace_from(p, n, k)
  if S.trace[k] < 0 then
    return false
  end
  return take_trace(p, k) or later_trace(p, n, k)
end

-- Copies what the scan found in the headers into H.
local function read_headers(p, n, is_request)
  H.length = tonumber(S.length)
  H.coding = S.coding
  if not is_request then
    return
  end
  local host = S.host
  if host >= 0 then
    local len = S.host_end - host
    H.host = ffi_string(p + host, len < HOST_MAX and len or HOST_MAX)
  end
  local _ = trace_from(p, n, 0) or trace_from(p, n, 1) or trace_from(p, n, 2) or trace_from(p, n, 3)
end

-- Parses the head that starts at p[i] (with n bytes visible at p) into H.
-- Returns the index after its blank line, INCOMPLETE (H holds what complete
-- lines showed) or MALFORMED.
local function parse_head(p, i, n, is_request)
  reset_head()
  local j
  if is_request then
    j = request_method(p, i, n)
  else
    j = status_code(p, i, n)
  end
  if j < 0 then
    return j
  end
  scan_head(p, j, n, is_request and 1 or 0, S)
  local lf = S.line_end
  if lf < 0 then
    if is_request then
      partial_target(p, j, n)
    end
    return INCOMPLETE
  end
  if is_request and not request_rest(p, j, lf) then
    return MALFORMED
  end
  local e = S["end"]
  if e == MALFORMED then
    return MALFORMED
  end
  read_headers(p, n, is_request)
  return e
end

-- Whether p[0..n) starts like a message of this direction: YES when all of
-- it that is visible fits (at least a method, its space and one byte of
-- target, or a status line up to its code), MAYBE when too little is
-- visible to tell, else NO. Leaves H changed.
local function starts_message(p, n, is_request)
  reset_head()
  if not is_request then
    local r = status_code(p, 0, n)
    return r >= 0 and YES or (r == MALFORMED and NO or MAYBE)
  end
  local j = request_method(p, 0, n)
  if j < 0 then
    return j == MALFORMED and NO or MAYBE
  end
  if j >= n then
    return MAYBE
  end
  if p[j] <= SP then
    return NO
  end
  local lf = scan_line_end(p, j, n)
  if lf < n and not request_rest(p, j, lf) then
    return NO
  end
  return YES
end

-- Slow: scans p[from..n) for the end of a head (a line end followed by an
-- empty line), going on from scan state s (1: after LF, 2: after LF CR).
-- Returns the index after the end (or -1) and the new state.
local function scan_head_end(p, from, n, s)
  for k = from, n - 1 do
    local c = p[k]
    if c == LF then
      if s ~= 0 then
        return k + 1, 0
      end
      s = 1
    elseif c == CR and s == 1 then
      s = 2
    else
      s = 0
    end
  end
  return -1, s
end

-- Whether p[0..n) ends a chunked body: "0" CRLF CRLF, alone or after a line end.
local function ends_chunked(p, n)
  if n < 5 or p[n - 1] ~= LF or p[n - 2] ~= CR or p[n - 3] ~= LF or p[n - 4] ~= CR or p[n - 5] ~= DIGIT0 then
    return false
  end
  return n == 5 or p[n - 6] == LF
end

-- ------------------------------------------------------------- exchanges

local function new_direction()
  return {
    mode = START, bytes = 0, left = 0, cst = CS_SIZE, csz = -1, chunked = false,
    ts0 = 0, last_ts = 0, parts = false, plen = 0, hs = 0,
  }
end

function _M.new_state()
  return {
    q = new_direction(), r = new_direction(), pending = {},
    q_open = false, r_open = false, r_gap = false, pipelined = false, tunnel = false,
    early = false, q_early = false, unkept = 0, r_unkept = false, r_cut = false,
  }
end

-- An exchange is built with every field present, false for those not
-- known (as for H, so that filling them in later costs no rehash; see
-- net/exchange.lua); deliver turns the falses into the nils of the contract
-- as it emits.
local function new_exchange()
  return exchange.new("http")
end

local function deliver(ex, emit)
  if not ex.method then
    ex.method = nil
  end
  if not ex.target then
    ex.target = nil
  end
  if not ex.version then
    ex.version = nil
  end
  if not ex.host then
    ex.host = nil
  end
  if not ex.request_start_ns then
    ex.request_start_ns, ex.request_end_ns, ex.request_bytes = nil, nil, nil
  end
  if not ex.response_start_ns then
    ex.response_start_ns, ex.response_end_ns, ex.response_bytes = nil, nil, nil
  end
  if not ex.trace_id then
    ex.trace_id, ex.trace_header, ex.trace_value = nil, nil, nil
  end
  if not ex.error then
    ex.error = nil
  end
  emit(exchange.parsed(ex))
end

-- The exchange of the request under way (state.q_open).
local function open_request_exchange(state)
  local pending = state.pending
  return state.q_early or pending[#pending]
end

-- Delivers the held response whose request was not seen, if any.
local function release_early(state, emit)
  local ex = state.early
  if ex then
    state.early = false
    deliver(ex, emit)
  end
end

local function finish_request(state, q, ts, emit)
  if state.q_open then
    local ex = open_request_exchange(state)
    ex.request_end_ns = ts
    ex.request_bytes = q.bytes
    state.q_open = false
    if state.q_early then
      state.q_early = false
      deliver(ex, emit)
    end
  end
  q.mode = START
  q.bytes = 0
end

local function finish_response(state, r, ts, emit)
  local pending = state.pending
  local ex = remove(pending, 1)
  state.r_open = false
  r.mode = START
  ex.response_end_ns = ts
  ex.response_bytes = r.bytes
  r.bytes = 0
  if state.q_open and #pending == 0 and not state.q_early then
    local q = state.q
    ex.request_end_ns = q.last_ts
    ex.request_bytes = q.bytes
    state.q_open = false
  end
  if not ex.request_start_ns and not state.r_unkept then
    release_early(state, emit)
    state.early = ex
    return
  end
  state.r_unkept = false
  if #pending == 0 then
    state.r_cut = false
  end
  deliver(ex, emit)
end

local function give_up(ex, reason, emit)
  ex.status = 0
  ex.error = ex.error or reason
  deliver(ex, emit)
end

-- The exchange a request starting at ts0 belongs to when its response came
-- first (the two directions' records can be out of order in the ring): the
-- held response that ended at or after ts0 (state.q_early then), or the
-- response under way with no request, if its last record is not older
-- than ts0. Else nil, and a held response is delivered as it is.
local function answered(state, ts0, emit)
  local early = state.early
  if early then
    if ts0 <= early.response_end_ns then
      state.early = false
      state.q_early = early
      return early
    end
    release_early(state, emit)
  end
  local first = state.pending[1]
  if #state.pending == 1 and state.r_open and not first.request_start_ns and not state.r_unkept and
    ts0 <= state.r.last_ts then
    return first
  end
  return nil
end

local function open_request(state, ts0, emit)
  local pending = state.pending
  local ex = answered(state, ts0, emit)
  if not ex then
    if #pending >= PENDING_MAX or state.unkept > 0 then
      state.unkept = state.unkept + 1
      return
    end
    ex = new_exchange()
    pending[#pending + 1] = ex
  end
  ex.method, ex.target, ex.host = H.method, H.target, H.host
  ex.version = H.version or ex.version
  ex.request_start_ns, ex.request_end_ns, ex.request_bytes = ts0, ts0, 0
  ex.trace_id, ex.trace_header, ex.trace_value = H.trace_id, H.trace_header, H.trace_value
  state.q_open = true
end

local function open_response(state, ts0, emit)
  local pending = state.pending
  release_early(state, emit)
  if #pending > 1 and not state.r_gap then
    state.pipelined = true
  end
  if state.r_gap then
    state.r_gap = false
    while #pending > 1 and not state.pipelined do
      give_up(remove(pending, 1), "lost sync", emit)
    end
  end
  local ex = pending[1]
  if not ex then
    if state.unkept > 0 then
      state.unkept = state.unkept - 1
      state.r_unkept = true
    end
    ex = new_exchange()
    pending[1] = ex
  end
  if state.r_cut then
    ex.error = "lost sync"
  end
  ex.status = H.status
  ex.version = ex.version or H.version
  ex.response_start_ns = ts0
  state.r_open = true
  return ex
end

-- Sets d's mode for the body of the message whose head is in H:
-- Content-Length, chunked, until close, unknown, or none (the message ends).
local function body_mode(d, is_request)
  local length, coded = H.length, H.coding
  if coded == 1 then
    d.mode, d.cst, d.csz, d.left = CHUNK, CS_SIZE, -1, 0
  elseif coded == 2 then
    d.mode = is_request and LOST or CLOSE
  elseif length == -2 then
    d.mode = LOST
  elseif length > 0 then
    d.mode, d.left = BODY, length
  elseif length == 0 or is_request then
    return false
  else
    d.mode = CLOSE
  end
  d.chunked = coded == 1
  return true
end

-- A complete head in H opens its message, which started at ts0 (d.bytes
-- holds the head's size); a message without body ends at ts.
local function begin(state, d, is_request, ts0, ts, emit)
  if is_request then
    open_request(state, ts0, emit)
    if not body_mode(d, true) then
      finish_request(state, d, ts, emit)
    end
    return
  end
  local status = H.status
  if status >= 100 and status < 200 and status ~= 101 then
    d.bytes = 0
    return
  end
  local ex = open_response(state, ts0, emit)
  if status == 101 or (ex.method == "CONNECT" and status >= 200 and status < 300) then
    finish_response(state, d, ts, emit)
    state.tunnel = true
  elseif ex.method == "HEAD" or status == 204 or status == 304 or status < 100 or not body_mode(d, false) then
    finish_response(state, d, ts, emit)
  end
end

-- A head whose end cannot be seen (cut by the capture, or over the limit):
-- its message opens with what H holds, of unknown end. false when H does
-- not hold enough to open one.
local function open_truncated(state, d, is_request, ts0, emit)
  if is_request then
    if not H.method then
      return false
    end
    open_request(state, ts0, emit)
  else
    local status = H.status
    if not status or (status >= 100 and status < 200) then
      return false
    end
    open_response(state, ts0, emit)
  end
  d.mode = LOST
  d.chunked = H.coding == 1
  return true
end

local function finish(state, d, is_request, ts, emit)
  if is_request then
    finish_request(state, d, ts, emit)
  else
    finish_response(state, d, ts, emit)
  end
end

-- Bytes of d's direction are skipped until a record starts like a message.
-- Skipped response bytes may have held whole responses: the next response
-- is paired as after a gap.
local function skip(state, d, is_request)
  d.mode = SYNC
  if not is_request then
    state.r_gap = true
  end
end

-- ---------------------------------------------------------- chunked body

-- Follows a chunked body from p[i] (copied bytes visible, total moved).
-- Returns the index where the body ended (the message is complete) or -1
-- when the record was used up; d.mode becomes LOST when a size line is not
-- visible or not valid.
local function chunked(d, p, i, copied, total)
  local st, size, left = d.cst, d.csz, d.left
  while i < total do
    if st == CS_DATA then
      if total - i < left then
        d.left = left - (total - i)
        d.cst = st
        return -1
      end
      i = i + left
      left = 0
      st = CS_DATA_END
    elseif i >= copied then
      d.mode = LOST
      return -1
    else
      local c = p[i]
      i = i + 1
      local line_done = false
      if st == CS_SIZE then
        local v = HEX[c]
        if v then
          if size >= 0x10000000000 then
            d.mode = LOST
            return -1
          end
          size = (size < 0 and 0 or size) * 16 + v
        elseif c == LF then
          line_done = true
        elseif size >= 0 and (c == CR or c == 59 or c == SP or c == HT) then
          st = CS_EXT
        else
          d.mode = LOST
          return -1
        end
      elseif st == CS_EXT then
        line_done = c == LF
      elseif st == CS_DATA_END then
        if c == LF then
          st, size = CS_SIZE, -1
        elseif c ~= CR then
          d.mode = LOST
          return -1
        end
      elseif st == CS_TRAILER then
        if c == LF then
          return i
        end
        st = c == CR and CS_TRAILER_CR or CS_TRAILER_LINE
      elseif st == CS_TRAILER_CR then
        if c == LF then
          return i
        end
        st = CS_TRAILER_LINE
      elseif c == LF then
        st = CS_TRAILER
      end
      if line_done then
        if size < 0 then
          d.mode = LOST
          return -1
        elseif size == 0 then
          st = CS_TRAILER
        else
          st, left = CS_DATA, size
        end
      end
    end
  end
  d.cst, d.csz, d.left = st, size, left
  return -1
end

-- ------------------------------------------------------------- records

-- A response record copied in part left the end of its response unknown
-- (LOST) or is being skipped (SYNC): the bytes not copied may have held
-- the responses of requests still waiting. Those exchanges, and the one
-- under way, say "lost sync" (never "no response": their answers may have
-- come) until no request waits any more.
local function cut_responses(state, d)
  local mode = d.mode
  if mode ~= LOST and mode ~= SYNC then
    return
  end
  local pending = state.pending
  if #pending > (state.r_open and 1 or 0) then
    state.r_cut = true
    if state.r_open then
      pending[1].error = "lost sync"
    end
  end
end

-- A message starts at p[i] (copied - i bytes visible): parse its head, open
-- it, or buffer a partial head. Returns the index after the head, or -1
-- when the rest of the record is used (or skipped).
local function start(state, d, is_request, p, i, copied, total, ts, emit)
  while i < copied and (p[i] == CR or p[i] == LF) do
    i = i + 1
  end
  if i >= copied then
    if copied < total then
      skip(state, d, is_request)
    end
    return -1
  end
  local e = parse_head(p, i, copied, is_request)
  if e >= 0 then
    d.bytes = e - i
    begin(state, d, is_request, ts, ts, emit)
    return e
  end
  if e == MALFORMED then
    skip(state, d, is_request)
    return -1
  end
  local visible = copied - i
  if copied < total or visible >= HEAD_LIMIT then
    if open_truncated(state, d, is_request, ts, emit) then
      d.bytes = total - i
    else
      skip(state, d, is_request)
    end
    return -1
  end
  local _, s = scan_head_end(p, i, copied, 0)
  d.parts = { ffi_string(p + i, visible) }
  d.plen, d.hs, d.ts0, d.mode = visible, s, ts, HEAD
  return -1
end

-- The record goes on a buffered partial head. Returns the index after the
-- head, or -1 when the rest of the record is used (or skipped).
local function head_more(state, d, is_request, p, copied, total, ts, emit)
  local plen = d.plen
  local room = HEAD_LIMIT - plen
  local n = copied < room and copied or room
  local f, s = scan_head_end(p, 0, n, d.hs)
  if f < 0 and n == copied and copied == total then
    local parts = d.parts
    parts[#parts + 1] = ffi_string(p, copied)
    d.plen, d.hs = plen + copied, s
    return -1
  end
  local text = concat(d.parts) .. ffi_string(p, f >= 0 and f or n)
  d.parts, d.plen, d.mode = false, 0, START
  local e = parse_head(cast(u8p, text), 0, #text, is_request)
  if f >= 0 and e >= plen then
    d.bytes = e
    begin(state, d, is_request, d.ts0, ts, emit)
    return e - plen
  end
  if e == INCOMPLETE and open_truncated(state, d, is_request, d.ts0, emit) then
    d.bytes = plen + total
  else
    skip(state, d, is_request)
  end
  return -1
end

-- A record arrives while a body is expected (or the end is unknown): when
-- it starts like a new message, the message under way ended at its last
-- record. Returns whether it did.
local function ended_before(state, d, is_request, p, copied, emit)
  if copied == 0 or starts_message(p, copied, is_request) ~= YES then
    return false
  end
  finish(state, d, is_request, d.last_ts, emit)
  return true
end

-- Content-Length body from p[i]: returns where it ended, or -1 when the
-- record was used up.
local function body_step(state, d, is_request, i, total, ts, emit)
  local n, left = total - i, d.left
  if n < left then
    d.left = left - n
    d.bytes = d.bytes + n
    return -1
  end
  d.bytes = d.bytes + left
  finish(state, d, is_request, ts, emit)
  return i + left
end

-- One step of the record from p[i] in d's mode: returns where the next step
-- starts, or -1 when the record is done. A head and a Content-Length body
-- that the record holds whole take one step: most records need no second
-- (and the JIT compiles the loop around steps poorly when it runs often).
local function step(state, d, is_request, p, i, copied, total, ts, emit)
  local mode = d.mode
  if mode == START then
    i = start(state, d, is_request, p, i, copied, total, ts, emit)
    if i < 0 or state.tunnel then
      return -1
    end
    if d.mode == BODY then
      return body_step(state, d, is_request, i, total, ts, emit)
    end
    return i
  elseif mode == BODY then
    return body_step(state, d, is_request, i, total, ts, emit)
  elseif mode == CHUNK then
    local e = chunked(d, p, i, copied, total)
    if e < 0 then
      d.bytes = d.bytes + (total - i)
      return -1
    end
    d.bytes = d.bytes + (e - i)
    finish(state, d, is_request, ts, emit)
    return e
  elseif mode == HEAD then
    i = head_more(state, d, is_request, p, copied, total, ts, emit)
    if i < 0 or state.tunnel then
      return -1
    end
    return i
  elseif mode == LOST then
    d.bytes = d.bytes + (total - i)
    if d.chunked and copied == total and ends_chunked(p, copied) then
      finish(state, d, is_request, ts, emit)
    end
  elseif mode == CLOSE then
    d.bytes = d.bytes + (total - i)
  end
  return -1
end

-- The bytes of body that follow the end of the piece just parsed and that
-- need no copy: the rest of a Content-Length body, or of a chunk's data (its
-- line end and the next size line are needed); 0 for anything else (a body
-- until the close, an unknown end, a head).
local function body_left(d)
  local mode = d.mode
  if mode == BODY or (mode == CHUNK and d.cst == CS_DATA) then
    return d.left
  end
  return 0
end

-- A piece of a record: copied bytes at ptr (never read when copied is 0:
-- bytes the kernel was asked not to copy, or sendfile's) of total moved.
-- Returns the bytes right after it that are body the parser does not need
-- copied (body_left).
function _M.on_data(state, is_request, ptr, copied, total, ts, emit)
  if state.tunnel or total <= 0 then
    return
  end
  if copied > total then
    copied = total
  end
  local p = cast(u8p, ptr)
  local d = is_request and state.q or state.r
  local mode = d.mode
  if mode == SYNC then
    d.mode = START
  elseif (mode == BODY or mode == CHUNK or mode == LOST) and ended_before(state, d, is_request, p, copied, emit) then
    d.mode = START
  end
  d.last_ts = ts
  local i = step(state, d, is_request, p, 0, copied, total, ts, emit)
  while i >= 0 and i < total do
    i = step(state, d, is_request, p, i, copied, total, ts, emit)
  end
  if not is_request and copied < total then
    cut_responses(state, d)
  end
  return body_left(d)
end

-- Whether the state holds nothing: no message under way in either
-- direction, no request waiting, nothing held, not a tunnel; a new state
-- would parse what comes next the same way.
function _M.at_rest(state)
  local q, r = state.q, state.r
  return (q.mode == START or q.mode == SYNC) and (r.mode == START or r.mode == SYNC) and #state.pending == 0 and
    not state.q_open and not state.r_open and not state.early and not state.tunnel and state.unkept == 0
end

function _M.on_gap(state, is_request)
  if state.tunnel then
    return
  end
  local d = is_request and state.q or state.r
  local mode = d.mode
  if mode == HEAD then
    d.parts, d.plen = false, 0
    skip(state, d, is_request)
  elseif mode == BODY or mode == CHUNK or mode == LOST then
    local open = is_request and state.q_open or (not is_request and state.r_open)
    if open then
      local ex = is_request and open_request_exchange(state) or state.pending[1]
      ex.error = "lost sync"
    end
    d.chunked = mode == CHUNK or (mode == LOST and d.chunked)
    d.mode = LOST
  elseif mode == START then
    skip(state, d, is_request)
  end
  if not is_request then
    state.r_gap = true
  end
end

function _M.on_idle(state, now_ns, idle_ns, emit)
  local r, q = state.r, state.q
  if r.mode == LOST and state.r_open and now_ns - r.last_ts >= idle_ns then
    finish_response(state, r, r.last_ts, emit)
  end
  if q.mode == LOST and now_ns - q.last_ts >= idle_ns then
    finish_request(state, q, q.last_ts, emit)
  end
  if state.early and now_ns - state.early.response_end_ns >= idle_ns then
    release_early(state, emit)
  end
end

-- A response whose head never completed: H holds its version and status
-- when the buffered part shows them, else status 0.
local function partial_head(r)
  local text = concat(r.parts)
  reset_head()
  status_code(cast(u8p, text), 0, #text)
  H.status = H.status or 0
end

function _M.on_close(state, _close_ns, emit)
  local r, q = state.r, state.q
  local pending = state.pending
  release_early(state, emit)
  if not state.tunnel then
    if state.r_open then
      local mode = r.mode
      if mode ~= CLOSE and mode ~= LOST then
        pending[1].error = pending[1].error or "closed mid-response"
      end
      finish_response(state, r, r.last_ts, emit)
    elseif r.mode == HEAD then
      partial_head(r)
      local ex = open_response(state, r.ts0, emit)
      ex.error = ex.error or "closed mid-response"
      r.bytes = r.plen
      finish_response(state, r, r.last_ts, emit)
    end
    if state.q_open then
      finish_request(state, q, q.last_ts, emit)
    end
    local reason = state.r_cut and "lost sync" or "no response"
    while #pending > 0 do
      give_up(remove(pending, 1), reason, emit)
    end
  end
  local fresh = _M.new_state()
  for k in pairs(state) do
    state[k] = nil
  end
  for k, v in pairs(fresh) do
    state[k] = v
  end
end

-- Whether the first bytes of a message (len of them readable at ptr) look
-- like an HTTP/1 request (is_request) or response.
function _M.detect(ptr, len, is_request)
  if len <= 0 then
    return false
  end
  return starts_message(cast(u8p, ptr), len, is_request) == YES
end

return _M
