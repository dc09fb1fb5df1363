-- trace_output.lua - how `moonrover trace` writes an exchange: aligned text
-- columns for a person (bytes from the wire escaped, so that a request cannot
-- rewrite the terminal), or one JSON object per line, a stable contract
-- (always valid UTF-8: a byte of a string that is not, U+FFFD):
--   ts            RFC 3339 UTC with microseconds: when the request's first byte moved
--   pid, tid      the traced process, and its thread that moved the exchange's last bytes
--   comm          the name of the thread that accepted or opened the connection
--   container_id  its container, as coroot's metrics name it: "/" for a host
--                 process, left out for a process that is not measured (a
--                 runtime's helper such as conmon, a pod or slice parent) or
--                 whose container is unknown (it exited before it was read)
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
-- And the end-of-trace summary: exchanges by status, and per protocol and
-- status class how many, how many have a duration, and their percentiles.
local latency_histogram = require("moonrover.net.latency_histogram")
local tables = require("moonrover.lib.tables")
local text_escape = require("moonrover.lib.text_escape")
local trace_json = require("moonrover.net.trace_json")

local _M = {}

local floor = math.floor

local TEXT_HEADER = string.format("%-12s %7s %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8s %8s  %s",
  "TIME", "PID", "COMM", "ROLE", "LOCAL", "REMOTE", "PROTO", "METHOD", "STATUS", "DUR_MS", "REQ_B", "RESP_B",
  "TARGET")

local PERCENTILES = { 0.5, 0.9, 0.99 }

-- clock: { wall_ns_at = function(monotonic_ns) -> Unix ns }.
function _M.new(format, clock)
  return { format = format, clock = clock, json = format == "json" and trace_json.new() or nil }
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

-- The second's text (RFC 3339, UTC, "YYYY-MM-DDTHH:MM:SS") and the
-- microseconds after it.
local function rfc3339(wall_ns)
  local s = floor(wall_ns / 1e9)
  if s ~= cached_second then
    cached_second, cached_text = s, os.date("!%Y-%m-%dT%H:%M:%S", s)
  end
  return cached_text, floor((wall_ns - s * 1e9) / 1e3)
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


local printable = text_escape.printable

local function text_line(ex, wall)
  local ms = duration_ms(ex)
  return string.format("%-12s %7d %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8d %8d  %s%s\n", clock_time(wall),
    ex.pid or 0, printable(ex.comm or "?"), ex.role or "?", ex["local"] or "?", ex.remote or "?",
    ex.protocol or "?", printable(ex.method or "-"), ex.status and ex.status > 0 and tostring(ex.status) or "-",
    ms and string.format("%.3f", ms) or "-", ex.request_bytes or 0, ex.response_bytes or 0,
    printable(ex.target or ""), ex.error and ("  (" .. ex.error .. ")") or "")
end

-- Holds the line of an exchange (with its "\n") in order (trace_order):
-- a JSON line is written straight into its buffer (trace_json).
function _M.add(out, order, ex)
  local start = _M.start_ns(ex)
  local wall = out.clock.wall_ns_at(start)
  if out.format ~= "json" then
    order:add(start, text_line(ex, wall))
    return
  end
  local p, i = order:room(trace_json.bound(ex))
  local second, us = rfc3339(wall)
  order:commit(start, trace_json.write(out.json, p, i, ex, second, us))
end

-- A new tally for the summary.
function _M.tally()
  return { by_status = {}, latency = {} }
end

-- The latency rows: "2xx" and friends, or "error" for an incomplete
-- exchange (or one whose status is outside 100..599), made once.
local CLASSES = { "1xx", "2xx", "3xx", "4xx", "5xx" }

local function status_class(ex)
  local status = ex.status
  if ex.error or not status or status <= 0 then
    return "error"
  end
  return CLASSES[floor(status / 100)] or "error"
end

local function bump(t, key)
  t[key] = (t[key] or 0) + 1
end

local function latency_row(tally, protocol, class)
  local rows = tally.latency[protocol]
  if not rows then
    rows = {}
    tally.latency[protocol] = rows
  end
  local row = rows[class]
  if not row then
    row = { exchanges = 0, measured = 0, histogram = latency_histogram.new() }
    rows[class] = row
  end
  return row
end

-- Counts one exchange into tally: by its status (an incomplete one by its
-- error, whatever status it got), and into its latency row. Per exchange,
-- so it builds no string.
function _M.count(tally, ex)
  local by_proto = tally.by_status[ex.protocol]
  if not by_proto then
    by_proto = {}
    tally.by_status[ex.protocol] = by_proto
  end
  bump(by_proto, ex.error or ex.status or 0)
  local row = latency_row(tally, ex.protocol, status_class(ex))
  row.exchanges = row.exchanges + 1
  if ex.duration_ns then
    row.measured = row.measured + 1
    row.histogram:add(ex.duration_ns)
  end
end

local function by_text(a, b)
  return tostring(a) < tostring(b)
end

-- The keys of t sorted; numbers (statuses) and strings (errors) as text.
local function sorted_keys(t)
  return tables.sorted_keys(t, by_text)
end

local function status_lines(tally, lines)
  for _, proto in ipairs(sorted_keys(tally.by_status)) do
    local parts, n, counts = {}, 0, tally.by_status[proto]
    for _, status in ipairs(sorted_keys(counts)) do
      parts[#parts + 1] = string.format("%s x%d", tostring(status), counts[status])
      n = n + counts[status]
    end
    lines[#lines + 1] = string.format("  %s: %d exchange(s): %s", proto, n, table.concat(parts, ", "))
  end
end

local function ms_text(ns)
  return ns and string.format("%.3f", ns / 1e6) or "-"
end

-- Per protocol and status class: the exchanges, how many of them have a
-- duration (a response whose request was not seen has none), then p50/p90/p99
-- in ms of those measured.
local function latency_lines(tally, lines)
  lines[#lines + 1] = string.format("  %-12s %9s %9s %10s %10s %10s", "latency", "count", "measured", "p50_ms",
    "p90_ms", "p99_ms")
  for _, proto in ipairs(sorted_keys(tally.latency)) do
    local rows = tally.latency[proto]
    for _, class in ipairs(sorted_keys(rows)) do
      local row = rows[class]
      local p = row.histogram:percentiles(PERCENTILES)
      lines[#lines + 1] = string.format("  %-12s %9d %9d %10s %10s %10s", proto .. " " .. class, row.exchanges,
        row.measured, ms_text(p[1]), ms_text(p[2]), ms_text(p[3]))
    end
  end
end

-- The summary: exchanges by protocol and status, their latencies, the notes
-- (a list of lines, optional), then every drop by its reason (drops: a list
-- of { reason, n }).
function _M.summary(tally, seconds, drops, notes)
  local lines = { string.format("moonrover trace: %.1f s", seconds) }
  if next(tally.by_status) then
    status_lines(tally, lines)
    latency_lines(tally, lines)
  else
    lines[#lines + 1] = "  no exchange seen"
  end
  for _, note in ipairs(notes or {}) do
    lines[#lines + 1] = "  " .. note
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
