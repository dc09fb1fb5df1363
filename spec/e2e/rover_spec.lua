-- End-to-end specs for the Rover drop-in against the stand-in OAP: a real
-- workload reported with the configured names, and profiling tasks whose
-- data arrives framed as OAP expects.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local oap = require("support.oap")

local skip = e2e.skip_reason()

local CONFIG = [[
core:
  backend:
    addr: 127.0.0.1:%d
process_discovery:
  heartbeat_period: 1s
  properties_report_period: 3
  scanner:
    regex:
      - match_cmd: "workloads/cpu_ratio"
        layer: OS_LINUX
        service_name: spec-service
        instance_name: spec-instance
        process_name: "{{.Process.ExeName}}"
        labels: ""
profiling:
  check_interval: 1s
  flush_interval: 1s
]]

local function write(path, text)
  local fh = assert(io.open(path, "w"))
  fh:write(text)
  fh:close()
end

local function reported(stub, pid)
  for _, r in ipairs(stub:records("reportProcesses")) do
    for _, p in ipairs(r.message.processes or {}) do
      local host = p.hostProcess
      if host and tonumber(host.pid) == pid then
        return p
      end
    end
  end
end

local function now_ms()
  local p = io.popen("date +%s%3N")
  local v = tonumber(p:read("*l"))
  p:close()
  return v
end

describe("Rover drop-in (end to end, stand-in OAP)", function()
  local dir, stub, agent, workload

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    if agent then
      agent:stop()
      agent = nil
    end
    if stub then
      stub:stop()
      stub = nil
    end
    e2e.kill(workload)
    e2e.rmdir(dir)
  end)

  local function start_all()
    stub = assert(oap.start({ dir = dir }))
    workload = e2e.spawn("cpu_ratio", "60")
    local cfg = dir .. "/rover.yaml"
    write(cfg, CONFIG:format(stub.port))
    os.execute("mkdir -p " .. dir .. "/scripts")
    agent = agent_run.start(dir, dir .. "/scripts", "--config " .. e2e.quote(cfg))
    assert.is_truthy(agent.port, agent:log_text())
  end

  it("reports the workload with the configured names and properties, then keeps it alive", function()
    if skip then return pending(skip) end
    start_all()
    local p = agent_run.wait_for(function() return reported(stub, workload) end, 100)
    assert.is_truthy(p, agent:log_text())
    local entity = p.hostProcess.entity
    assert.same("OS_LINUX", entity.layer)
    assert.same("spec-service", entity.serviceName)
    assert.same("spec-instance", entity.instanceName)
    assert.same("cpu_ratio", entity.processName)
    local props = {}
    for _, kv in ipairs(p.hostProcess.properties or {}) do
      props[kv.key] = kv.value
    end
    assert.same("true", props.support_ebpf_profiling)
    assert.same(tostring(workload), props.pid)
    assert.is_truthy(stub:wait_records("keepAlive", 1))
  end)

  it("runs an ON_CPU task and sends the hot functions leaf first, the task on the first message", function()
    if skip then return pending(skip) end
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    local now = now_ms()
    stub:write_tasks({ { taskId = "spec-on-cpu", updateTime = now, startTime = now, duration = 60,
      serviceName = "spec-service", targetType = "ON_CPU" } })
    local records = stub:wait_records("collectProfilingData", 3, 150)
    assert.is_truthy(records, agent:log_text())
    assert.same("spec-on-cpu", records[1].message.task.taskId)
    local leaves = {}
    for _, r in ipairs(stub:records("collectProfilingData")) do
      local on = r.message.onCPU
      assert.is_truthy(on, "every message carries onCPU")
      for _, st in ipairs(on.stacks or {}) do
        if st.stackType == "PROCESS_USER_SPACE" then
          leaves[st.stackSymbols[1]] = true
        end
      end
    end
    assert.is_true(leaves.burn_alpha or false)
  end)

  it("does not start a task before its start time", function()
    if skip then return pending(skip) end
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    local now = now_ms()
    local start = now + 5000
    stub:write_tasks({ { taskId = "spec-later", updateTime = now, startTime = start, duration = 60,
      serviceName = "spec-service", targetType = "ON_CPU" } })
    local records = stub:wait_records("collectProfilingData", 1, 200)
    assert.is_truthy(records, agent:log_text())
    assert.is_true(tonumber(records[1].message.task.profilingStartTime) >= start)
    assert.is_true(records[1].time >= start)
  end)
end)
