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

  it("encodes a pod's process as EBPFKubernetesProcessMetadata, field 2 of the oneof", function()
    local schema = assert(oap_client.schema())
    local r = assert(reporter.new({ agent_id = fixtures.AGENT, heartbeat_every = 10 }))
    local envoy = fixtures.process(600, "envoy", { kind = "kubernetes", properties = { host_ip = "10.0.0.7",
      container_ip = "10.244.1.12", container_name = "istio-proxy", pod_name = "reviews-v1-x2x9", pid = "600",
      command_line = "envoy --serve", support_ebpf_profiling = "true" } })
    r:update({ envoy })
    local report = r:next_calls()[1].message
    local wire = assert(protobuf.encode(schema, "skywalking.v3.EBPFProcessReportList", report))
    -- processes (1, length-delimited) holding k8sProcess (2, length-delimited).
    assert.equal(0x0a, wire:byte(1))
    local i = 2
    while wire:byte(i) >= 0x80 do -- the item's length, a varint
      i = i + 1
    end
    assert.equal(0x12, wire:byte(i + 1))
    assert.same(report, protobuf.decode(schema, "skywalking.v3.EBPFProcessReportList", wire))
  end)
end)
