-- trace_output.lua - how `moonrover trace` writes an exchange: aligned text
-- columns for a person, or one JSON object per line, a stable contract:
--   ts            RFC 3339 UTC with microseconds: when the request's first byte moved
--   pid, comm     the traced process
--   role          "server" or "client"
--   local, remote "ip:port" ("[addr]:port" for IPv6)
--   protocol      "http"
--   method, target, status (a number; 0 when no response came)
--   duration_ms   request's first byte to response's last byte, kernel clock
--   request_bytes, response_bytes
--   tls           true when read through a TLS library's plaintext
--   trace_id      only when a trace header (traceparent, sw8, b3) was present
--   error         only for an incomplete exchange: "no response", ...
-- A response whose request was not seen (a connection traced from the
-- middle of an exchange) has no method, target, duration_ms nor
-- request_bytes, and its ts is its response's first byte.
-- and the end-of-trace summary.
local json_text = require("moonrover.lib.json_text")

local _M = {}

local JSON_KEYS = { "ts", "pid", "comm", "role", "local", "remote", "protocol", "method", "target", "status",
  "duration_ms", "request_bytes", "response_bytes", "tls", "trace_id", "error" }

local TEXT_HEADER = string.format("%-12s %7s %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8s %8s  %s",
  "TIME", "PID", "COMM", "ROLE", "LOCAL", "REMOTE", "PROTO", "METHOD", "STATUS", "MS", "REQ", "RESP", "TARGET")

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

-- The line for an exchange (with its "\n").
function _M.line(out, ex)
  local wall = out.clock.wall_ns_at(ex.request_start_ns or ex.response_start_ns or 0)
  if out.format == "json" then
    local fields = { ts = rfc3339(wall), pid = ex.pid, comm = ex.comm, role = ex.role, ["local"] = ex["local"],
      remote = ex.remote, protocol = ex.protocol, method = ex.method, target = ex.target, status = ex.status or 0,
      duration_ms = duration_ms(ex), request_bytes = ex.request_bytes, response_bytes = ex.response_bytes,
      tls = ex.tls, trace_id = ex.trace_id, error = ex.error }
    return json_text.object(JSON_KEYS, fields) .. "\n"
  end
  local ms = duration_ms(ex)
  return string.format("%-12s %7d %-15s %-6s %-21s %-21s %-5s %-7s %6s %10s %8d %8d  %s%s\n", clock_time(wall),
    ex.pid or 0, ex.comm or "?", ex.role or "?", ex["local"] or "?", ex.remote or "?", ex.protocol or "?",
    ex.method or "-", ex.status and ex.status > 0 and tostring(ex.status) or "-",
    ms and string.format("%.3f", ms) or "-", ex.request_bytes or 0, ex.response_bytes or 0, ex.target or "",
    ex.error and ("  (" .. ex.error .. ")") or "")
end

-- An incomplete exchange counts by its error, whatever status it got.
local function status_class(ex)
  return ex.error or tostring(ex.status)
end

-- Counts one exchange into the summary's tally.
function _M.count(tally, ex)
  local by_proto = tally[ex.protocol] or {}
  tally[ex.protocol] = by_proto
  local key = status_class(ex)
  by_proto[key] = (by_proto[key] or 0) + 1
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  return keys
end

-- The summary: exchanges by protocol and status, then every drop by its
-- reason (drops: a list of { reason, n }).
function _M.summary(tally, seconds, drops)
  local lines = { string.format("moonrover trace: %.1f s", seconds) }
  local any = false
  for _, proto in ipairs(sorted_keys(tally)) do
    local parts, n = {}, 0
    for _, status in ipairs(sorted_keys(tally[proto])) do
      parts[#parts + 1] = string.format("%s x%d", status, tally[proto][status])
      n = n + tally[proto][status]
    end
    lines[#lines + 1] = string.format("  %s: %d exchange(s): %s", proto, n, table.concat(parts, ", "))
    any = true
  end
  if not any then
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
