-- trace_json.lua - writes the JSON line of one exchange of `moonrover trace
-- --format json` straight into bytes (an FFI buffer: trace_order's), with
-- no Lua string made for it: keys and our own strings are copied, numbers
-- written digit by digit, strings off the wire copied byte by byte while
-- they need no escape, and escaped otherwise (json_text, after
-- trace_utf8 made them valid UTF-8). Building the line from a table of
-- fields and a string per value cost 6 us per exchange; this, under 1 us.
-- The keys and their order are the contract that trace_output.lua lists.
local ffi = require("ffi")
local json_text = require("moonrover.lib.json_text")
local valid_utf8 = require("moonrover.net.trace_utf8").valid

local _M = {}

local copy, cast = ffi.copy, ffi.cast
local byte = string.byte
local u8p = ffi.typeof("const uint8_t *")
local floor = math.floor

local FIXED = 640 -- bytes of a line besides its strings: keys, numbers, the time
local MEMO_MAX = 4096 -- process names and containers kept escaped, at most

local QUOTE, BACKSLASH, ZERO = 34, 92, 48

-- The text of a field, from its comma (none for the first) to its colon.
local function key(name, first)
  return (first and "{" or ",") .. json_text.string(name) .. ":"
end

local K = {}
for i, name in ipairs({ "ts", "pid", "tid", "comm", "container_id", "role", "local", "remote", "protocol", "method",
  "target", "host", "status", "duration_ms", "request_bytes", "response_bytes", "tls", "trace_id", "error" }) do
  K[name] = key(name, i == 1)
end

local function raw(p, i, s)
  local n = #s
  copy(p + i, s, n)
  return i + n
end

-- The digits of the integer n >= 0.
local function digits(p, i, n)
  if n < 10 then
    p[i] = ZERO + n
    return i + 1
  end
  local e, m = i + 2, 100
  while n >= m do
    m = m * 10
    e = e + 1
  end
  local k = e - 1
  repeat
    local q = floor(n / 10)
    p[k] = ZERO + (n - q * 10)
    n, k = q, k - 1
  until n == 0
  return e
end

-- A JSON number: an integer digit by digit, anything else as json_text writes it.
local function number(p, i, n)
  if n >= 0 and n < 2 ^ 53 and n == floor(n) then
    return digits(p, i, n)
  end
  return raw(p, i, json_text.number(n))
end

-- A string of our own (no byte that needs escaping).
local function plain(p, i, s)
  p[i] = QUOTE
  i = raw(p, i + 1, s)
  p[i] = QUOTE
  return i + 1
end

-- A string off the wire: valid UTF-8, escaped as JSON says. Its bytes are
-- copied one by one while none needs escaping (a compiled loop: cheaper
-- than string.find's pattern); at the first that does, json_text and
-- trace_utf8 write it all.
local function text(p, i, s)
  local n, q = #s, cast(u8p, s)
  local o = i + 1
  for k = 0, n - 1 do
    local c = q[k]
    if c < 32 or c == QUOTE or c == BACKSLASH or c >= 127 then
      return raw(p, i, json_text.string(valid_utf8(s)))
    end
    p[o + k] = c
  end
  p[i], p[o + n] = QUOTE, QUOTE
  return o + n + 1
end

-- Milliseconds of an integer number of ns: digits, and up to 6 decimals
-- without trailing zeros (exact: no floating point division).
local function milliseconds(p, i, ns)
  if ns < 0 or ns ~= floor(ns) then
    return number(p, i, ns / 1e6)
  end
  local whole = floor(ns / 1e6)
  local frac = ns - whole * 1e6
  i = digits(p, i, whole)
  if frac == 0 then
    return i
  end
  p[i] = byte(".")
  local last = i + 6
  for k = last, i + 1, -1 do
    local q = floor(frac / 10)
    p[k] = ZERO + (frac - q * 10)
    frac = q
  end
  while p[last] == ZERO do
    last = last - 1
  end
  return last + 1
end

-- The microseconds after a second's text: ".NNNNNNZ".
local function micros(p, i, us)
  p[i] = byte(".")
  for k = i + 6, i + 1, -1 do
    local q = floor(us / 10)
    p[k] = ZERO + (us - q * 10)
    us = q
  end
  p[i + 7] = byte("Z")
  return i + 8
end

local function len(s)
  return s and #s or 0
end

-- A writer: its memo of escaped process names and containers (they repeat
-- from line to line).
function _M.new()
  return { memo = {}, memo_n = 0 }
end

-- The quoted JSON text of a process name or container, from the memo.
local function memo_text(w, s)
  local t = w.memo[s]
  if t then
    return t
  end
  if w.memo_n >= MEMO_MAX then
    w.memo, w.memo_n = {}, 0
  end
  t = json_text.string(valid_utf8(s))
  w.memo[s], w.memo_n = t, w.memo_n + 1
  return t
end

-- Bytes enough for the line of ex: each string byte may become 6 ("\u00XX").
function _M.bound(ex)
  return FIXED + 6 * (len(ex.comm) + len(ex.target) + len(ex.host) + len(ex.trace_id) + len(ex.error)) +
    (type(ex.container_id) == "string" and 6 * #ex.container_id or 0) + len(ex["local"]) + len(ex.remote) +
    len(ex.role) + len(ex.protocol) + len(ex.method)
end

-- Writes the line of ex (with its "\n") at p[i], its second's text
-- (UTC, "YYYY-MM-DDTHH:MM:SS") and microseconds given; returns the index
-- after it. p must have _M.bound(ex) bytes from i.
function _M.write(w, p, i, ex, second, us)
  i = raw(p, i, K.ts)
  p[i] = QUOTE
  i = micros(p, raw(p, i + 1, second), us)
  p[i] = QUOTE
  i = i + 1
  if ex.pid then
    i = number(p, raw(p, i, K.pid), ex.pid)
  end
  if ex.tid then
    i = number(p, raw(p, i, K.tid), ex.tid)
  end
  if ex.comm then
    i = raw(p, raw(p, i, K.comm), memo_text(w, ex.comm))
  end
  local container = ex.container_id
  if type(container) == "string" then
    i = raw(p, raw(p, i, K.container_id), memo_text(w, container))
  end
  if ex.role then
    i = plain(p, raw(p, i, K.role), ex.role)
  end
  if ex["local"] then
    i = plain(p, raw(p, i, K["local"]), ex["local"])
  end
  if ex.remote then
    i = plain(p, raw(p, i, K.remote), ex.remote)
  end
  if ex.protocol then
    i = plain(p, raw(p, i, K.protocol), ex.protocol)
  end
  if ex.method then
    i = text(p, raw(p, i, K.method), ex.method)
  end
  if ex.target then
    i = text(p, raw(p, i, K.target), ex.target)
  end
  if ex.host then
    i = text(p, raw(p, i, K.host), ex.host)
  end
  i = number(p, raw(p, i, K.status), ex.status or 0)
  if ex.duration_ns then
    i = milliseconds(p, raw(p, i, K.duration_ms), ex.duration_ns)
  end
  if ex.request_bytes then
    i = number(p, raw(p, i, K.request_bytes), ex.request_bytes)
  end
  if ex.response_bytes then
    i = number(p, raw(p, i, K.response_bytes), ex.response_bytes)
  end
  if ex.tls ~= nil then
    i = raw(p, raw(p, i, K.tls), ex.tls and "true" or "false")
  end
  if ex.trace_id then
    i = text(p, raw(p, i, K.trace_id), ex.trace_id)
  end
  if ex.error then
    i = plain(p, raw(p, i, K.error), ex.error)
  end
  p[i], p[i + 1] = byte("}"), byte("\n")
  return i + 2
end


return _M
