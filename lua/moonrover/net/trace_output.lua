-- trace_output.lua - how `moonrover trace` writes an exchange: aligned text
-- columns for a person (bytes from the wire escaped, so that a request cannot
-- rewrite the terminal), or one JSON object per line, a stable contract:
--   ts            RFC 3339 UTC with microseconds: when the request's first byte moved
--   pid, tid      the traced process, and its thread that moved the exchange's last bytes
--   comm          the process's name
--   container_id  its container, as coroot's metrics name it (only when known)
--   role          "server" or "client"
--   local, remote "ip:port" ("[addr]:port" for IPv6)
--   protocol      "http"
--   method, target, host (the Host header, only when sent)
--   status        a number; 0 when no response came
--   duration_ms   request's first byte to response's last byte, kernel clock
--   request_bytes, response_bytes
--   tls           true when read through a TLS library's plaintext
--   trace_id      only when a trace header (traceparent, sw8, b3) was present
--   error         only for an incomplete exchange: "no response", ...
-- A response whose request was not seen (a connection traced from the
-- middle of an exchange) has no method, target, duration_ms nor
-- request_bytes, and its ts is its response's first byte.
-- And the end-of-trace summary: exchanges by status, and the latency
-- percentiles per protocol and status class.
local json_text = require("moonrover.lib.json_text")
local latency_histogram = require("moonrover.net.latency_histogram")
local text_escape = require("moonrover.lib.text_escape")

local _M = {}

local JSON_KEYS = { "ts", "pid", "tid", "comm", "container_id", "role", "local", "remote", "protocol", "method",
  "target", "host", "status", "duration_ms", "request_bytes", "response_bytes", "tls", "trace_id", "error" }

local TEXT_HEADER = string.format("%-12s %7s %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8s %8s  %s",
  "TIME", "PID", "COMM", "ROLE", "LOCAL", "REMOTE", "PROTO", "METHOD", "STATUS", "DUR_MS", "REQ_B", "RESP_B",
  "TARGET")

local PERCENTILES = { 0.5, 0.9, 0.99 }

-- clock: { wall_ns_at = function(monotonic_ns) -> Unix ns }.
function _M.new(format, clock)
  return { format = format, clock = clock }
end

function _M.header(out)
  if out.format == "text" then
    return TEXT_HEADER .. "\n"
  end
  return ""
end

-- The date and time of the last second formatted: lines come by the
-- thousand per second, os.date costs a microsecond.
local cached_second, cached_text

local function rfc3339(wall_ns)
  local s = math.floor(wall_ns / 1e9)
  local us = math.floor((wall_ns - s * 1e9) / 1e3)
  if s ~= cached_second then
    cached_second, cached_text = s, os.date("!%Y-%m-%dT%H:%M:%S", s)
  end
  return cached_text .. string.format(".%06dZ", us)
end

local function clock_time(wall_ns)
  local s = math.floor(wall_ns / 1e9)
  return os.date("!%H:%M:%S", s) .. string.format(".%03d", math.floor((wall_ns - s * 1e9) / 1e6))
end

local function duration_ms(ex)
  return ex.duration_ns and ex.duration_ns / 1e6 or nil
end

-- The kernel time an exchange is written and ordered by.
function _M.start_ns(ex)
  return ex.request_start_ns or ex.response_start_ns or 0
end

local function json_line(ex, wall)
  local fields = { ts = rfc3339(wall), pid = ex.pid, tid = ex.tid, comm = ex.comm,
    container_id = type(ex.container_id) == "string" and ex.container_id or nil, role = ex.role,
    ["local"] = ex["local"], remote = ex.remote, protocol = ex.protocol, method = ex.method, target = ex.target,
    host = ex.host or nil, status = ex.status or 0, duration_ms = duration_ms(ex), request_bytes = ex.request_bytes,
    response_bytes = ex.response_bytes, tls = ex.tls, trace_id = ex.trace_id, error = ex.error }
  return json_text.object(JSON_KEYS, fields) .. "\n"
end

local printable = text_escape.printable

local function text_line(ex, wall)
  local ms = duration_ms(ex)
  return string.format("%-12s %7d %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8d %8d  %s%s\n", clock_time(wall),
    ex.pid or 0, printable(ex.comm or "?"), ex.role or "?", ex["local"] or "?", ex.remote or "?",
    ex.protocol or "?", printable(ex.method or "-"), ex.status and ex.status > 0 and tostring(ex.status) or "-",
    ms and string.format("%.3f", ms) or "-", ex.request_bytes or 0, ex.response_bytes or 0,
    printable(ex.target or ""), ex.error and ("  (" .. ex.error .. ")") or "")
end

-- The line for an exchange (with its "\n").
function _M.line(out, ex)
  local wall = out.clock.wall_ns_at(_M.start_ns(ex))
  if out.format == "json" then
    return json_line(ex, wall)
  end
  return text_line(ex, wall)
end

-- A new tally for the summary.
function _M.tally()
  return { by_status = {}, latency = {} }
end

-- An incomplete exchange counts by its error, whatever status it got.
local function status_key(ex)
  return ex.error or tostring(ex.status)
end

-- The latency rows: "2xx" and friends, or "error" for an incomplete exchange.
local function status_class(ex)
  if ex.error or not ex.status or ex.status <= 0 then
    return "error"
  end
  return math.floor(ex.status / 100) .. "xx"
end

local function bump(t, key)
  t[key] = (t[key] or 0) + 1
end

-- Counts one exchange into tally.
function _M.count(tally, ex)
  local by_proto = tally.by_status[ex.protocol] or {}
  tally.by_status[ex.protocol] = by_proto
  bump(by_proto, status_key(ex))
  local key = ex.protocol .. " " .. status_class(ex)
  local row = tally.latency[key]
  if not row then
    row = { exchanges = 0, histogram = latency_histogram.new() }
    tally.latency[key] = row
  end
  row.exchanges = row.exchanges + 1
  if ex.duration_ns then
    row.histogram:add(ex.duration_ns)
  end
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  return keys
end

local function status_lines(tally, lines)
  for _, proto in ipairs(sorted_keys(tally.by_status)) do
    local parts, n, counts = {}, 0, tally.by_status[proto]
    for _, status in ipairs(sorted_keys(counts)) do
      parts[#parts + 1] = string.format("%s x%d", status, counts[status])
      n = n + counts[status]
    end
    lines[#lines + 1] = string.format("  %s: %d exchange(s): %s", proto, n, table.concat(parts, ", "))
  end
end

local function ms_text(ns)
  return ns and string.format("%.3f", ns / 1e6) or "-"
end

-- count, then p50/p90/p99 in ms, per protocol and status class.
local function latency_lines(tally, lines)
  lines[#lines + 1] = string.format("  %-12s %9s %10s %10s %10s", "latency", "count", "p50_ms", "p90_ms", "p99_ms")
  for _, key in ipairs(sorted_keys(tally.latency)) do
    local row = tally.latency[key]
    local p = row.histogram:percentiles(PERCENTILES)
    lines[#lines + 1] = string.format("  %-12s %9d %10s %10s %10s", key, row.exchanges, ms_text(p[1]), ms_text(p[2]),
      ms_text(p[3]))
  end
end

-- The summary: exchanges by protocol and status, their latencies, then
-- every drop by its reason (drops: a list of { reason, n }).
function _M.summary(tally, seconds, drops)
  local lines = { string.format("moonrover trace: %.1f s", seconds) }
  if next(tally.by_status) then
    status_lines(tally, lines)
    latency_lines(tally, lines)
  else
    lines[#lines + 1] = "  no exchange seen"
  end
  local lost = {}
  for _, d in ipairs(drops) do
    if d.n > 0 then
      lost[#lost + 1] = string.format("%s: %d", d.reason, d.n)
    end
  end
  lines[#lines + 1] = "  lost: " .. (#lost > 0 and table.concat(lost, ", ") or "nothing")
  return table.concat(lines, "\n") .. "\n"
end

return _M
