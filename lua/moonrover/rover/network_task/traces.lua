-- traces.lua - the messages of a sampled trace (sampling.lua) as Rover sends
-- them: a LogData tagged LOG_KIND=NET_PROFILING_SAMPLED_TRACE whose JSON body
-- OAP's network-profiling log rule reads (uri, reason, latency,
-- trace_provider, client_process, server_process, detect_point, component,
-- ssl, status), and, when the rule's Settings ask for the complete request
-- or response, a SpanAttachedEvent for each ("HTTP Request Sampling",
-- "HTTP Response Sampling") referring to the span of the trace header.
--
-- The tracer keeps what it parsed of a message, not its bytes, so an
-- event's data_content is the start line and the Host and trace headers.
local json = require("moonrover.lib.json_text")
local trace_context = require("moonrover.net.protocols.trace_context")
local traffic = require("moonrover.rover.network_task.traffic")

local _M = {}

_M.LOG_KIND = "NET_PROFILING_SAMPLED_TRACE"
local SKYWALKING, ZIPKIN = 0, 1 -- SpanAttachedEvent.SpanReferenceType
local UNITS = { "B", "KiB", "MiB", "GiB", "TiB" }

-- A size as Rover writes it (binary units, 4 significant digits): 345B, 1.5KiB.
function _M.size_text(n)
  local i = 1
  while n >= 1024 and i < #UNITS do
    n, i = n / 1024, i + 1
  end
  return (string.format("%.4g", n)) .. UNITS[i]
end

local function process_json(p)
  return json.object({ "process_id", "local", "address" }, p)
end

-- The two ends of sample's exchange as the log body names them.
local function ends(sample, peers)
  local ex, member = sample.ex, sample.member
  local me = { process_id = member.id, ["local"] = false, address = "" }
  local other = { process_id = "", ["local"] = false, address = "" }
  local peer = traffic.member_at(peers, ex.remote)
  local ip = traffic.ip(ex.remote)
  if peer then
    other.process_id = peer.id
  elseif ip and (traffic.loopback(ip) or peers.local_ips[ip]) then
    other["local"] = true
  else
    other.address = ex.remote or ""
  end
  if traffic.role(ex.role) == "client" then
    return me, other
  end
  return other, me
end

-- The JSON body of sample's log.
function _M.body(sample, peers)
  local ex = sample.ex
  local client, server = ends(sample, peers)
  local head = json.object({ "uri", "reason", "latency", "trace_provider" },
    { uri = sample.uri, reason = sample.reason, latency = sample.latency, trace_provider = sample.provider })
  local tail = json.object({ "detect_point", "component", "ssl", "status" },
    { detect_point = traffic.role(ex.role), component = "http", ssl = false, status = ex.status })
  return head:sub(1, -2) .. ',"client_process":' .. process_json(client) .. ',"server_process":'
    .. process_json(server) .. "," .. tail:sub(2)
end

-- The LogData of sample (now_ms: the report's time, as Rover stamps it).
function _M.log(sample, peers, now_ms)
  local e = sample.member.entity
  return {
    timestamp = now_ms, service = e.serviceName, serviceInstance = e.instanceName, layer = e.layer,
    body = { type = "json", json = { json = _M.body(sample, peers) } },
    traceContext = { traceId = sample.ex.trace_id },
    tags = { data = { { key = "LOG_KIND", value = _M.LOG_KIND } } },
  }
end

-- The span a trace header names: { traceId, traceSegmentId, spanId, type }.
function _M.span_ref(ex)
  local segment, span = "", ""
  if ex.trace_header == "sw8" and ex.trace_value then
    segment, span = trace_context.sw8_span(ex.trace_value)
  elseif ex.trace_header == "b3" and ex.trace_value then
    span = ex.trace_value:match("^%x+%-(%x+)") or ""
  end
  return { traceId = ex.trace_id, traceSegmentId = segment or "", spanId = span or "",
    type = ex.trace_header == "sw8" and SKYWALKING or ZIPKIN }
end

-- The wall-clock Instant of a tracer timestamp (clock: the wall clock's
-- lead, split in whole seconds and nanoseconds so that no sum exceeds what
-- a double holds exactly).
local function instant(ns, clock)
  local seconds = math.floor(ns / 1e9)
  local nanos = ns - seconds * 1e9 + clock.nanos
  local carry = math.floor(nanos / 1e9)
  return { seconds = seconds + clock.seconds + carry, nanos = nanos - carry * 1e9 }
end

local function content(ex, request, max)
  local text
  if request then
    text = string.format("%s %s HTTP/%s", tostring(ex.method), tostring(ex.target), tostring(ex.version))
      .. (ex.host and ("\r\nHost: " .. ex.host) or "")
      .. (ex.trace_value and ("\r\n" .. ex.trace_header .. ": " .. ex.trace_value) or "")
  else
    text = string.format("HTTP/%s %d", tostring(ex.version), ex.status)
  end
  if type(max) == "number" and max > 0 and #text > max then
    text = text:sub(1, max)
  end
  return text
end

local function direction(role, request)
  local inbound = (traffic.role(role) == "server") == request
  return inbound and "inbound" or "outbound"
end

local function event(sample, request, clock)
  local ex, e, settings = sample.ex, sample.member.entity, sample.rule.Settings
  local kind = request and "request" or "response"
  return {
    startTime = instant(request and ex.request_start_ns or ex.response_start_ns, clock),
    endTime = instant(request and ex.request_end_ns or ex.response_end_ns, clock),
    event = request and "HTTP Request Sampling" or "HTTP Response Sampling",
    tags = {
      { key = "data_size", value = _M.size_text(request and ex.request_bytes or ex.response_bytes) },
      { key = "data_content", value = content(ex, request,
        request and settings.MaxRequestSize or settings.MaxResponseSize) },
      { key = "data_direction", value = direction(ex.role, request) },
      { key = "data_type", value = kind },
      { key = "connection_role", value = traffic.role(ex.role) },
      { key = "service_name", value = e.serviceName },
      { key = "service_instance_name", value = e.instanceName },
      { key = "process_name", value = e.processName },
    },
    summary = {},
    traceContext = _M.span_ref(ex),
  }
end

-- The SpanAttachedEvents of sample: none, the request's, the response's or
-- both, as its rule's Settings ask. clock: { seconds, nanos }, the wall
-- clock minus the tracer's (monotonic) clock.
function _M.events(sample, clock)
  local settings, out = sample.rule.Settings, {}
  if type(settings) ~= "table" then
    return out
  end
  if settings.RequireCompleteRequest == true then
    out[#out + 1] = event(sample, true, clock)
  end
  if settings.RequireCompleteResponse == true then
    out[#out + 1] = event(sample, false, clock)
  end
  return out
end

return _M
