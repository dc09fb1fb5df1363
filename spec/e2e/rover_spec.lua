-- End-to-end specs for the Rover drop-in against the stand-in OAP: a real
-- workload reported with the configured names, and profiling tasks whose
-- data arrives framed as OAP expects.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local oap = require("support.oap")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local CONFIG = [[
core:
  backend:
    addr: 127.0.0.1:%d
%s
process_discovery:
  heartbeat_period: 1s
  properties_report_period: 3
  scanner:
    regex:
      - match_cmd: "workloads/(cpu_ratio|sleeper)"
        layer: OS_LINUX
        service_name: spec-service
        instance_name: spec-instance
        process_name: "{{.Process.ExeName}}"
        labels: ""
profiling:
  check_interval: 1s
  flush_interval: 1s
]]

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

local function sh(cmd)
  local p = io.popen(cmd)
  local v = p:read("*l")
  p:close()
  return v
end

-- The stand-in's process id of an entity (like OAP's: a hash of the names).
local function oap_process_id(service, instance, process)
  return sh(string.format("printf '%%s\\0%%s\\0%%s' %s %s %s | sha256sum | cut -d' ' -f1", service, instance,
    process))
end

local function data_of(stub, task_id)
  local out, current = {}, nil
  for _, r in ipairs(stub:records("collectProfilingData")) do
    if r.message.task then
      current = r.message.task
    end
    if current and current.taskId == task_id then
      out[#out + 1] = { record = r, task = current }
    end
  end
  return out
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

  -- opts.workload (default cpu_ratio, false for none), opts.stub (oap.start
  -- options), opts.backend (extra core.backend lines).
  local function start_all(opts)
    opts = opts or {}
    local stub_opts = opts.stub or {}
    stub_opts.dir = dir
    stub = assert(oap.start(stub_opts))
    if opts.workload ~= false then
      workload = e2e.spawn(opts.workload or "cpu_ratio", "60")
    end
    local cfg = dir .. "/rover.yaml"
    write(cfg, CONFIG:format(stub.port, opts.backend or ""))
    os.execute("mkdir -p " .. dir .. "/scripts")
    agent = agent_run.start(dir, dir .. "/scripts", "--config " .. e2e.quote(cfg))
    assert.is_truthy(agent.port, agent:log_text())
  end

  local function task(fields)
    local now = now_ms()
    local t = { taskId = "spec-task", updateTime = now, startTime = now, duration = 60,
      serviceName = "spec-service", targetType = "ON_CPU" }
    for k, v in pairs(fields or {}) do
      t[k] = v
    end
    return t
  end

  it("reports the workload with the configured names and properties, then keeps it alive", function()
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

  it("runs an OFF_CPU task: switch counts and blocked time of the sleeping workload", function()
    start_all({ workload = "sleeper" })
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    stub:write_tasks({ task({ taskId = "spec-off-cpu", targetType = "OFF_CPU" }) })
    assert.is_truthy(stub:wait_records("collectProfilingData", 2, 150), agent:log_text())
    local switches, nanos, nap = 0, 0, false
    for _, d in ipairs(data_of(stub, "spec-off-cpu")) do
      local off = d.record.message.offCPU
      assert.is_truthy(off, "every message carries offCPU")
      switches = switches + off.switchCount
      nanos = nanos + tonumber(off.duration)
      for _, st in ipairs(off.stacks or {}) do
        nap = nap or (st.stackType == "PROCESS_USER_SPACE" and st.stackSymbols[1] == "nap_in_known_function")
      end
    end
    assert.is_true(switches > 0)
    assert.is_true(nanos > 0)
    assert.is_true(nap)
  end)

  it("extends a task OAP sends again with a longer duration, without restarting it", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    local t = task({ taskId = "spec-extend", duration = 3 })
    stub:write_tasks({ t })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-extend") > 0 end, 100))
    local started = tonumber(data_of(stub, "spec-extend")[1].task.profilingStartTime)
    t.duration, t.updateTime = 9, now_ms()
    stub:write_tasks({ t })
    local later = agent_run.wait_for(function()
      for _, d in ipairs(data_of(stub, "spec-extend")) do
        if tonumber(d.task.currentTime) > started + 5000 then
          return d
        end
      end
    end, 150)
    assert.is_truthy(later, "the task should still send data after its first 3 s\n" .. agent:log_text())
    assert.same(started, tonumber(later.task.profilingStartTime))
  end)

  it("replaces a running task by a new one for the same process, keeping the old one's data", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    stub:write_tasks({ task({ taskId = "spec-first" }) })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-first") > 0 end, 100))
    stub:write_tasks({ task({ taskId = "spec-first" }), task({ taskId = "spec-second", updateTime = now_ms() + 1 }) })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-second") > 0 end, 100),
      agent:log_text())
    assert.matches("task spec%-first %(ON_CPU%) replaced by task spec%-second", agent:log_text())
    local first = data_of(stub, "spec-first")
    local second = data_of(stub, "spec-second")
    assert.is_true(first[1].record.time <= second[1].record.time)
  end)

  it("runs a task whose process is only reported after the task was first seen", function()
    start_all({ workload = false })
    local id = oap_process_id("spec-service", "spec-instance", "cpu_ratio")
    stub:write_tasks({ task({ taskId = "spec-early", serviceName = false, processIds = { id } }) })
    assert.is_truthy(stub:wait_records("queryTasks", 2, 100))
    workload = e2e.spawn("cpu_ratio", "60")
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-early") > 0 end, 150),
      agent:log_text())
  end)

  it("survives OAP going away mid-task and sends data again once it is back", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    stub:write_tasks({ task({ taskId = "spec-outage" }) })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-outage") > 0 end, 100))
    local port = stub.port
    stub:stop()
    os.execute("sleep 3")
    assert.is_true(agent:alive())
    local back = now_ms()
    stub = assert(oap.start({ dir = dir, port = port }))
    assert.is_truthy(agent_run.wait_for(function()
      for _, d in ipairs(data_of(stub, "spec-outage")) do
        if d.record.time >= back then
          return true
        end
      end
    end, 200), agent:log_text())
    assert.is_true(agent:alive())
  end)

  it("talks TLS and sends the Authentication header when configured", function()
    local code, _, err = e2e.run(string.format("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      .. "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s/key.pem -out %s/cert.pem", dir, dir))
    assert(code == 0, err)
    start_all({ stub = { auth = "spec-token", tls = { cert = dir .. "/cert.pem", key = dir .. "/key.pem" } },
      backend = string.format("    enable_TLS: true\n    ca_pem_path: %s/cert.pem\n"
        .. "    authentication: spec-token", dir) })
    local p = agent_run.wait_for(function() return reported(stub, workload) end, 100)
    assert.is_truthy(p, agent:log_text())
    for _, r in ipairs(stub:records("reportProcesses")) do
      assert.same("spec-token", r.metadata.authentication)
    end
  end)

  it("sends dump counts that add up to the samples taken, then frees the task's kernel objects", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    local fds_before = tonumber(sh("ls /proc/" .. agent.pid .. "/fd | wc -l"))
    stub:write_tasks({ task({ taskId = "spec-count", duration = 2 }) })
    assert.is_truthy(agent_run.wait_for(function()
      return agent:log_text():match("task spec%-count %(ON_CPU%) finished")
    end, 100), agent:log_text())
    local taken = 'moonrover_rover_task_samples{task="spec-count"}'
    local function sent()
      local n = 0
      for _, d in ipairs(data_of(stub, "spec-count")) do
        n = n + d.record.message.onCPU.dumpCount
      end
      return n
    end
    assert.is_truthy(agent_run.wait_for(function()
      local total = agent:metric(taken)
      return total and total > 0 and sent() == total
    end, 100), "sent " .. sent() .. ", taken " .. tostring(agent:metric(taken)))
    assert.is_truthy(agent_run.wait_for(function()
      return tonumber(sh("ls /proc/" .. agent.pid .. "/fd | wc -l")) <= fds_before
    end, 50), "the finished task's perf events and BPF objects should be closed")
  end)

  it("names processes with a user's Lua naming module before the configured rules", function()
    os.execute("mkdir -p " .. dir .. "/scripts")
    write(dir .. "/scripts/process_naming.lua", [[
local _M = {}
function _M.name(ctx)
  if ctx.process.exe_name == "cpu_ratio" then
    return { layer = "GENERAL", serviceName = "named-in-lua", instanceName = ctx.rover.host_name,
      processName = "burner", labels = { "lua" } }
  end
end
return _M
]])
    start_all()
    local p = agent_run.wait_for(function() return reported(stub, workload) end, 100)
    assert.is_truthy(p, agent:log_text())
    assert.same("named-in-lua", p.hostProcess.entity.serviceName)
    assert.same("burner", p.hostProcess.entity.processName)
    assert.same({ "lua" }, p.hostProcess.entity.labels)
  end)

  it("sends the running tasks' last data when the agent is stopped", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    stub:write_tasks({ task({ taskId = "spec-stop" }) })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-stop") > 0 end, 100))
    local stopped_at = now_ms()
    assert.same(0, agent:stop())
    agent = nil
    local last = data_of(stub, "spec-stop")
    assert.is_true(last[#last].record.time >= stopped_at, "a flush should follow the stop signal")
  end)

  it("keeps its agent id and running tasks across a hot reload", function()
    start_all()
    assert.is_truthy(agent_run.wait_for(function() return reported(stub, workload) end, 100), agent:log_text())
    stub:write_tasks({ task({ taskId = "spec-reload" }) })
    assert.is_truthy(agent_run.wait_for(function() return #data_of(stub, "spec-reload") > 0 end, 100))
    local started = tonumber(data_of(stub, "spec-reload")[1].task.profilingStartTime)
    local reloaded = now_ms()
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function()
      for _, d in ipairs(data_of(stub, "spec-reload")) do
        if d.record.time > reloaded + 1500 then
          return true
        end
      end
    end, 150), agent:log_text())
    for _, d in ipairs(data_of(stub, "spec-reload")) do
      assert.same(started, tonumber(d.task.profilingStartTime))
    end
    local first_id = stub:records("queryTasks")[1].message.roverInstanceId
    for _, r in ipairs(stub:records("queryTasks")) do
      assert.same(first_id, r.message.roverInstanceId)
    end
    assert.matches("loaded %d script%(s%)", agent:log_text())
  end)
end)
