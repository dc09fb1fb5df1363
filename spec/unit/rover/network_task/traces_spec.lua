-- Specs for the messages of a NETWORK task's sampled traces: the LogData
-- OAP's network-profiling log rule reads, and the SpanAttachedEvents of the
-- request and the response, with the span the sw8 or b3 header names.
local json = require("moonrover.lib.json_decode")
local traces = require("moonrover.rover.network_task.traces")
local traffic = require("moonrover.rover.network_task.traffic")

local NGINX = { pid = 100, id = "p-nginx", entity = { layer = "OS_LINUX", serviceName = "web", instanceName = "host-1",
  processName = "nginx" } }
local BACKEND = { pid = 200, id = "p-backend", entity = NGINX.entity }

-- sw8 of trace "trace-1", segment "segment-1", span 3.
local SW8 = "1-dHJhY2UtMQ==-c2VnbWVudC0x-3-d2Vi-aG9zdC0x-L2FwaQ==-MTAuMC4wLjU6ODA="

local function sample(fields, rule)
  local ex = { protocol = "http", method = "GET", target = "/slow?x=1", version = "1.1", host = "web",
    status = 200, request_bytes = 120, response_bytes = 2048, request_start_ns = 5e9, request_end_ns = 5e9 + 1000,
    response_start_ns = 5.5e9, response_end_ns = 5.5e9 + 2000, duration_ns = 0.5e9 + 2000, trace_id = "trace-1",
    trace_header = "sw8", trace_value = SW8, pid = NGINX.pid, role = "server", ["local"] = "10.0.0.5:80",
    remote = "10.0.0.9:51000", conn = 1 }
  for k, v in pairs(fields or {}) do
    ex[k] = v
  end
  return { member = NGINX, ex = ex, uri = "/slow", reason = "slow", provider = "skywalking", latency = 500,
    rule = rule or { MinDuration = 100 } }
end

describe("rover network traces", function()
  it("writes the LogData of a sampled trace as Rover does", function()
    local log = traces.log(sample(), traffic.peers(), 7000)
    assert.same({ 7000, "web", "host-1", "OS_LINUX" }, { log.timestamp, log.service, log.serviceInstance, log.layer })
    assert.same({ traceId = "trace-1" }, log.traceContext)
    assert.same({ data = { { key = "LOG_KIND", value = "NET_PROFILING_SAMPLED_TRACE" } } }, log.tags)
    assert.equal("json", log.body.type)
    assert.equal('{"uri":"/slow","reason":"slow","latency":500,"trace_provider":"skywalking",'
      .. '"client_process":{"process_id":"","local":false,"address":"10.0.0.9:51000"},'
      .. '"server_process":{"process_id":"p-nginx","local":false,"address":""},'
      .. '"detect_point":"server","component":"http","ssl":false,"status":200}', log.body.json.json)
  end)

  it("names the other end by its process when it is the task's, as local when on this host", function()
    local peers = traffic.peers()
    traffic.add_local(peers, "127.0.0.1:8080", BACKEND)
    local body = json.decode(traces.body(sample({ role = "client", remote = "127.0.0.1:8080" }), peers))
    assert.same({ process_id = "p-nginx", ["local"] = false, address = "" }, body.client_process)
    assert.same({ process_id = "p-backend", ["local"] = false, address = "" }, body.server_process)
    assert.equal("client", body.detect_point)
    body = json.decode(traces.body(sample({ role = "client", remote = "127.0.0.1:9" }), peers))
    assert.same({ process_id = "", ["local"] = true, address = "" }, body.server_process)
  end)

  it("sends no span events unless the rule's Settings ask for the complete request or response", function()
    assert.same({}, traces.events(sample(), { seconds = 0, nanos = 0 }))
    local rule = { Settings = { RequireCompleteResponse = true } }
    local events = traces.events(sample(nil, rule), { seconds = 0, nanos = 0 })
    assert.equal(1, #events)
    assert.equal("HTTP Response Sampling", events[1].event)
  end)

  it("writes the request and response events with wall-clock instants and the span of the sw8 header", function()
    local rule = { Settings = { RequireCompleteRequest = true, RequireCompleteResponse = true, MaxRequestSize = 12 } }
    local events = traces.events(sample(nil, rule), { seconds = 1700000000, nanos = 999999500 })
    assert.equal(2, #events)
    local req, resp = events[1], events[2]
    assert.equal("HTTP Request Sampling", req.event)
    assert.same({ seconds = 1700000005, nanos = 999999500 }, req.startTime)
    assert.same({ seconds = 1700000006, nanos = 500 }, req.endTime)
    assert.same({ seconds = 1700000006, nanos = 499999500 }, resp.startTime)
    assert.same({ traceId = "trace-1", traceSegmentId = "segment-1", spanId = "3", type = 0 }, req.traceContext)
    local tags = {}
    for _, t in ipairs(req.tags) do
      tags[t.key] = t.value
    end
    assert.same({ data_size = "120B", data_content = "GET /slow?x=", data_direction = "inbound",
      data_type = "request", connection_role = "server", service_name = "web", service_instance_name = "host-1",
      process_name = "nginx" }, tags)
    tags = {}
    for _, t in ipairs(resp.tags) do
      tags[t.key] = t.value
    end
    assert.same({ "2KiB", "HTTP/1.1 200", "outbound", "response" },
      { tags.data_size, tags.data_content, tags.data_direction, tags.data_type })
    assert.same({}, resp.summary)
  end)

  it("refers to a Zipkin span by the b3 header's span id", function()
    local ref = traces.span_ref({ trace_id = "80f198ee56343ba864fe8b2a57d3eff7", trace_header = "b3",
      trace_value = "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1" })
    assert.same({ traceId = "80f198ee56343ba864fe8b2a57d3eff7", traceSegmentId = "", spanId = "e457b5a2e4d86bd1",
      type = 1 }, ref)
  end)

  it("writes sizes in binary units as Rover does", function()
    assert.equal("0B", traces.size_text(0))
    assert.equal("1023B", traces.size_text(1023))
    assert.equal("1.5KiB", traces.size_text(1536))
    assert.equal("50MiB", traces.size_text(52428800))
  end)
end)
