-- Specs for a NETWORK task's messages and rules with the runtime: what a
-- report holds encodes with the SkyWalking descriptors the runtime carries
-- (Meter, Logging and Tracing protos: a field they lack fails the encoding)
-- and reads back to the same bytes, and the
-- sampling rules' URIRegex are POSIX regular expressions.
local oap_client = require("moonrover.rover.oap_client")
local protobuf = require("moonrover.lib.protobuf")
local runner = require("moonrover.rover.network_task.runner")
local sampling = require("moonrover.rover.network_task.sampling")
local sys = require("moonrover.rover.finder_facts")
local tables = require("support.tables")

local NGINX = { pid = 100, id = "p-nginx", entity = { layer = "OS_LINUX", serviceName = "web", instanceName = "host-1",
  processName = "nginx" } }
local RULES = '{"NetworkSamplings":[{"MinDuration":10,"When5xx":true,'
  .. '"Settings":{"RequireCompleteRequest":true,"RequireCompleteResponse":true}}]}'

local function exchange(fields)
  return tables.merged({ protocol = "http", method = "GET", target = "/api/items", version = "1.1", status = 200,
    request_bytes = 100, response_bytes = 300, request_start_ns = 1e9, request_end_ns = 1e9 + 1000,
    response_start_ns = 1.02e9, response_end_ns = 1.02e9 + 500, duration_ns = 20e6 + 500, pid = NGINX.pid,
    role = "server", ["local"] = "10.0.0.5:80", remote = "10.0.0.9:5000", conn = 1, trace_id = "trace-1",
    trace_header = "sw8", trace_value = "1-dHJhY2UtMQ==-c2VnbWVudC0x-3-d2Vi-aG9zdC0x-L2FwaQ==-MTAuMC4wLjU6ODA=" },
    fields)
end

describe("rover network messages on the wire", function()
  it("encode with the project's Meter, Logging and Tracing protos and read back the same", function()
    local schema = assert(oap_client.schema())
    local streams = { add = function() return true end, remove = function() end }
    local sender = { add = function() end, remove = function() end }
    local r = assert(runner.new({ id = "t", target = "NETWORK", process_ids = { "p-nginx" }, extension_json = RULES },
      { NGINX }, { prefix = "rover_net_p", streams = streams, sender = sender, regex = sys.regex,
        log = function() end }))
    assert(r:start())
    r:on_connection({ { kind = "connect", pid = NGINX.pid, role = "client", conn = 2, local_addr = "10.0.0.5:4000",
      remote_addr = "10.0.0.7:80", connect_ns = 1.5e6, bytes_sent = 10, bytes_received = 20 } })
    r:on_http({ exchange(), exchange({ status = 503 }) })
    local report = r:report(1700000000000, { seconds = 1699999000, nanos = 0 })
    local kinds = { meters = "skywalking.v3.MeterDataCollection", logs = "skywalking.v3.LogData",
      events = "skywalking.v3.SpanAttachedEvent" }
    for kind, type_name in pairs(kinds) do
      assert.is_true(#report[kind] > 0, kind)
      for _, m in ipairs(report[kind]) do
        local wire = assert(protobuf.encode(schema, type_name, m))
        assert.equal(wire, protobuf.encode(schema, type_name, protobuf.decode(schema, type_name, wire)))
      end
    end
  end)

  it("chooses rules by POSIX regular expressions; an empty URIRegex matches every path, as in Rover", function()
    local s, problems = sampling.new('{"NetworkSamplings":[{"URIRegex":"","When4xx":true},'
      .. '{"URIRegex":"^/api/(items|users)$","MinDuration":5},{"URIRegex":"[","When5xx":true}]}', { regex = sys.regex })
    assert.equal(1, #problems)
    assert.matches('rule 3: URIRegex "%["', problems[1])
    assert.equal(5, s:rule_for("/api/users").MinDuration)
    assert.is_true(s:rule_for("/api/orders").When4xx)
    assert.is_true(s:rule_for("/").When4xx)
  end)
end)
