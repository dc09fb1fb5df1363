-- Specs for process_reporter.lua on the wire: its messages encode and decode
-- with the SkyWalking descriptors the runtime carries (proto/skywalking).
local fixtures = require("support.rover_processes")
local oap_client = require("moonrover.rover.oap_client")
local protobuf = require("moonrover.lib.protobuf")
local reporter = require("moonrover.rover.process_reporter")

describe("process_reporter with Process.proto", function()
  it("builds messages that encode with the project's Process.proto", function()
    local schema = assert(oap_client.schema())
    local r = assert(reporter.new({ agent_id = fixtures.AGENT, heartbeat_every = 10 }))
    local nginx, redis = fixtures.process(310, "nginx"), fixtures.process(420, "redis-server")
    redis.properties.container_id = string.rep("ab", 32)
    r:update({ nginx, redis })
    local report = r:next_calls()[1].message
    local wire = assert(protobuf.encode(schema, "skywalking.v3.EBPFProcessReportList", report))
    assert.same(report, protobuf.decode(schema, "skywalking.v3.EBPFProcessReportList", wire))
    local answer = assert(protobuf.encode(schema, "skywalking.v3.EBPFReportProcessDownstream",
      fixtures.downstream({ nginx, "id-nginx" }, { redis, "id-redis" })))
    r:on_report_response(protobuf.decode(schema, "skywalking.v3.EBPFReportProcessDownstream", answer))
    local ping = r:next_calls()[1].message
    assert.truthy(protobuf.encode(schema, "skywalking.v3.EBPFProcessPingPkgList", ping))
    assert.equal(redis, r:process_by_id("id-redis"))
  end)
end)
