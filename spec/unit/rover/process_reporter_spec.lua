-- Specs for process_reporter.lua: the heartbeat state machine that reports
-- processes to OAP, keeps them alive and learns their OAP ids.
local fixtures = require("support.rover_processes")
local reporter = require("moonrover.rover.process_reporter")
local tables = require("support.tables")

local AGENT, process, downstream = fixtures.AGENT, fixtures.process, fixtures.downstream

local function rpcs(calls)
  return tables.pluck(calls, "rpc")
end

local function reported_pids(call)
  local out = {}
  for i, item in ipairs(call.message.processes) do
    out[i] = (item.hostProcess or item.k8sProcess).pid
  end
  return out
end

local function new(every)
  return assert(reporter.new({ agent_id = AGENT, heartbeat_every = every or 10 }))
end

describe("process_reporter", function()
  local nginx, redis, app

  before_each(function()
    nginx, redis, app = process(310, "nginx"), process(420, "redis-server"), process(500, "app")
  end)

  it("reports new processes at the first heartbeat, as EBPFProcessReportList", function()
    local r = new()
    assert.same({}, r:update({ redis, nginx }))
    local calls = r:next_calls()
    assert.same({ "reportProcesses" }, rpcs(calls))
    assert.same({
      ebpfAgentID = AGENT,
      processes = {
        { hostProcess = { entity = nginx.entity, pid = 310, properties = {
          { key = "host_ip", value = "10.0.0.7" },
          { key = "pid", value = "310" },
          { key = "command_line", value = "nginx --serve" },
          { key = "support_ebpf_profiling", value = "true" },
        } } },
        { hostProcess = { entity = redis.entity, pid = 420, properties = {
          { key = "host_ip", value = "10.0.0.7" },
          { key = "pid", value = "420" },
          { key = "command_line", value = "redis-server --serve" },
          { key = "support_ebpf_profiling", value = "true" },
        } } },
      },
    }, calls[1].message)
  end)

  it("sends the container id as a property when there is one", function()
    local r = new()
    redis.properties.container_id = string.rep("ab", 32)
    r:update({ redis })
    local props = r:next_calls()[1].message.processes[1].hostProcess.properties
    assert.same({ key = "container_id", value = string.rep("ab", 32) }, props[5])
  end)

  it("reports a pod's process as EBPFKubernetesProcessMetadata with Rover's properties", function()
    local r = new()
    local envoy = process(600, "envoy", { kind = "kubernetes", properties = { host_ip = "10.0.0.7",
      container_ip = "10.244.1.12", container_name = "istio-proxy", pod_name = "reviews-v1-x2x9", pid = "600",
      command_line = "envoy --serve", support_ebpf_profiling = "true" } })
    r:update({ envoy, nginx })
    local items = r:next_calls()[1].message.processes
    assert.is_nil(items[1].k8sProcess)
    assert.same({ k8sProcess = { entity = envoy.entity, pid = 600, properties = {
      { key = "host_ip", value = "10.0.0.7" },
      { key = "container_ip", value = "10.244.1.12" },
      { key = "container_name", value = "istio-proxy" },
      { key = "pod_name", value = "reviews-v1-x2x9" },
      { key = "pid", value = "600" },
      { key = "command_line", value = "envoy --serve" },
      { key = "support_ebpf_profiling", value = "true" },
    } } }, items[2])
    r:on_report_response({ processes = { { processId = "id-envoy", k8sProcess = { pid = 600,
      entityMetadata = envoy.entity } } } })
    assert.equal(envoy, r:process_by_id("id-envoy"))
  end)

  it("reports processes found between heartbeats once, at once", function()
    local r = new()
    r:update({ nginx })
    r:next_calls()
    assert.is_nil(r:new_call())
    r:update({ nginx, redis, app })
    local call = r:new_call()
    assert.equal("reportProcesses", call.rpc)
    assert.same({ 420, 500 }, reported_pids(call))
    assert.is_nil(r:new_call())
    r:on_report_response(downstream({ redis, "id-redis" }))
    -- The next heartbeat leaves the new processes to that call's answer,
    -- which gave app no id: the one after reports it again.
    local calls = r:next_calls()
    assert.same({ "reportProcesses", "keepAlive" }, rpcs(calls))
    assert.same({ 310 }, reported_pids(calls[1]))
    assert.same({ 310, 500 }, reported_pids(r:next_calls()[1]))
  end)

  it("reports again at the next heartbeat what a failed report of new processes held", function()
    local r = new(3)
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    r:update({ nginx, redis })
    r:on_report_failed(r:new_call())
    -- Not a full report: only redis again.
    local calls = r:next_calls()
    assert.same({ "reportProcesses", "keepAlive" }, rpcs(calls))
    assert.same({ 420 }, reported_pids(calls[1]))
  end)

  it("sends nothing when there are no processes", function()
    local r = new()
    r:update({})
    assert.same({}, r:next_calls())
  end)

  it("matches OAP ids by pid and entity, labels as a set", function()
    local r = new()
    r:update({ nginx, redis })
    r:next_calls()
    local stranger = process(310, "other")
    local identified = r:on_report_response(downstream({ nginx, "id-nginx" }, { redis, "id-redis" },
      { stranger, "id-other" }, { process(999, "nginx"), "id-wrong-pid" }))
    assert.same({ nginx, redis }, identified)
    assert.equal(nginx, r:process_by_id("id-nginx"))
    assert.equal(redis, r:process_by_id("id-redis"))
    assert.is_nil(r:process_by_id("id-other"))
    assert.is_nil(r:process_by_id("id-wrong-pid"))
  end)

  it("reports again a process OAP did not return, and keeps the others alive", function()
    local r = new()
    r:update({ nginx, redis })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    local calls = r:next_calls()
    assert.same({ "reportProcesses", "keepAlive" }, rpcs(calls))
    assert.same({ 420 }, reported_pids(calls[1]))
    r:on_report_response(downstream({ redis, "id-redis" }))
    assert.equal(redis, r:process_by_id("id-redis"))
  end)

  it("keeps processes unreported when the report fails", function()
    local r = new()
    r:update({ nginx })
    r:next_calls()
    r:on_report_failed()
    local calls = r:next_calls()
    assert.same({ "reportProcesses" }, rpcs(calls))
    assert.same({ 310 }, reported_pids(calls[1]))
  end)

  it("keeps reported processes alive with EBPFProcessPingPkgList", function()
    local r = new()
    nginx.properties.support_ebpf_profiling = "false"
    r:update({ nginx, redis })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }, { redis, "id-redis" }))
    local calls = r:next_calls()
    assert.same({ "keepAlive" }, rpcs(calls))
    assert.same({
      ebpfAgentID = AGENT,
      processes = {
        { entityMetadata = nginx.entity, properties = { { key = "support_ebpf_profiling", value = "false" } } },
        { entityMetadata = redis.entity, properties = { { key = "support_ebpf_profiling", value = "true" } } },
      },
    }, calls[1].message)
  end)

  it("reports new processes and keeps the reported ones alive in the same heartbeat", function()
    local r = new()
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    r:update({ nginx, app })
    local calls = r:next_calls()
    assert.same({ "reportProcesses", "keepAlive" }, rpcs(calls))
    assert.same({ 500 }, reported_pids(calls[1]))
    assert.equal(1, #calls[2].message.processes)
  end)

  it("reports every process with its properties every Nth heartbeat", function()
    local r = new(3)
    r:update({ nginx, redis })
    local seen = {}
    for tick = 1, 7 do
      local calls = r:next_calls()
      if tick == 1 then
        r:on_report_response(downstream({ nginx, "id-nginx" }, { redis, "id-redis" }))
      end
      seen[tick] = table.concat(rpcs(calls), "+") .. ":" .. #calls[1].message.processes
    end
    assert.same({ "reportProcesses:2", "keepAlive:2", "reportProcesses:2", "keepAlive:2", "keepAlive:2",
      "reportProcesses:2", "keepAlive:2" }, seen)
  end)

  it("repeats a failed full report at the next heartbeat", function()
    local r = new(2)
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    assert.same({ "reportProcesses" }, rpcs(r:next_calls())) -- full
    r:on_report_failed()
    assert.same({ "reportProcesses" }, rpcs(r:next_calls())) -- full again
    assert.same({ "keepAlive" }, rpcs(r:next_calls()))
    assert.equal(nginx, r:process_by_id("id-nginx"))
  end)

  it("keeps the id of a reported process that a full report's answer leaves out", function()
    local r = new(2)
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    r:next_calls()
    r:on_report_response(downstream())
    assert.same({ "keepAlive" }, rpcs(r:next_calls()))
    assert.equal(nginx, r:process_by_id("id-nginx"))
  end)

  it("removes vanished processes and returns them", function()
    local r = new()
    r:update({ nginx, redis, app })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }, { redis, "id-redis" }))
    assert.same({ nginx, app }, r:update({ redis }))
    assert.is_nil(r:process_by_id("id-nginx"))
    assert.equal(redis, r:process_by_id("id-redis"))
    local calls = r:next_calls()
    assert.same({ "keepAlive" }, rpcs(calls))
    assert.equal(1, #calls[1].message.processes)
  end)

  it("treats a restarted process (same pid, new start) as a new one", function()
    local r = new()
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    local again = process(310, "nginx", { start_ns = 99999 })
    assert.same({ nginx }, r:update({ again }))
    assert.is_nil(r:process_by_id("id-nginx"))
    assert.same({ "reportProcesses" }, rpcs(r:next_calls()))
    r:on_report_response(downstream({ again, "id-nginx" }))
    assert.equal(again, r:process_by_id("id-nginx"))
  end)

  it("serves the latest scan's table for a known process", function()
    local r = new()
    r:update({ nginx })
    r:next_calls()
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    local fresh = process(310, "nginx")
    fresh.properties.support_ebpf_profiling = "false"
    assert.same({}, r:update({ fresh }))
    assert.equal(fresh, r:process_by_id("id-nginx"))
    assert.same("false", r:next_calls()[1].message.processes[1].properties[1].value)
  end)

  it("validates its options", function()
    local r, err = reporter.new({ agent_id = AGENT, heartbeat_every = 0 })
    assert.is_nil(r)
    assert.equal("heartbeat_every: not a positive integer", err)
    r, err = reporter.new({ heartbeat_every = 10 })
    assert.is_nil(r)
    assert.equal("agent_id: missing", err)
  end)
end)

describe("process_reporter:reported", function()
  it("lists the processes OAP gave an id, by pid, with their id", function()
    local nginx, redis = process(310, "nginx"), process(420, "redis-server")
    local r = new()
    r:update({ redis, nginx })
    assert.same({}, r:reported())
    r:on_report_response(downstream({ redis, "id-redis" }))
    assert.same({ { process = redis, id = "id-redis" } }, r:reported())
    r:on_report_response(downstream({ nginx, "id-nginx" }))
    assert.same({ 310, 420 }, { r:reported()[1].process.pid, r:reported()[2].process.pid })
  end)
end)
