-- End-to-end specs for the Rover drop-in against the stand-in OAP: a real
-- workload reported with the configured names, and profiling tasks whose
-- data arrives framed as OAP expects.
local clock = require("support.clock")
local e2e = require("support.e2e")
local oap = require("support.oap")
local rover_run = require("support.rover_run")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The periods CONFIG sets, in seconds.
local HEARTBEAT_S, CHECK_S, FLUSH_S = 1, 1, 1

-- The drop-in's schedule (drop_in.lua, docs/architecture.md) with those
-- periods, counted from the agent's start: the first scan and report after
-- 0.5 s, repeated every heartbeat while OAP has not answered; the first
-- queryTasks after 1 s, then every check_interval; tasks start and stop at
-- a tick, every second; their data goes out every flush_interval. Calls made
-- while OAP is away fail at once; the channel reconnects with gRPC's
-- backoff, capped at 10 s (transport.c), plus its 20% jitter.
local FIRST_REPORT_S, FIRST_QUERY_S, TICK_S, RECONNECT_S = 0.5, 1, 1, 12
-- When the workload, started before the agent, has been reported.
local REPORTED_S = FIRST_REPORT_S + HEARTBEAT_S
-- From a task written to the stand-in to its first data there: the next
-- queryTasks, the next tick, the next flush.
local TASK_DATA_S = CHECK_S + TICK_S + FLUSH_S
-- Added to every deadline (see support/rover_run.lua).
local SLACK_S = rover_run.SLACK_S

-- The rule matches only the copies of the workloads in the case's own
-- directory: the finder reports one process per entity (as Rover does), so
-- a rule matching every cpu_ratio on the host would report whichever ran
-- first, maybe another suite's, and never this case's.
local CONFIG = [[
core:
  backend:
    addr: 127.0.0.1:<port>
<backend>
process_discovery:
  heartbeat_period: <heartbeat>s
  kubernetes:
    active: false
  properties_report_period: 3
  scanner:
    regex:
      - match_cmd: "^<dir>/workloads/(cpu_ratio|sleeper) "
        layer: OS_LINUX
        service_name: spec-service
        instance_name: spec-instance
        process_name: "{{.Process.ExeName}}"
        labels: ""
profiling:
  check_interval: <check>s
  flush_interval: <flush>s
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

describe("Rover drop-in (end to end, stand-in OAP)", function()
  local dir, stub, agent, workload, idle

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    rover_run.stop(agent, stub)
    agent, stub = nil, nil
    e2e.kill(workload)
    e2e.kill(idle)
    idle = nil
    e2e.rmdir(dir)
  end)

  -- The case's own copy of a workload (see CONFIG), started; its pid.
  local function spawn(name)
    return e2e.spawn_copy(dir, name, "60")
  end

  -- opts.workload (default cpu_ratio, false for none), opts.stub (oap.start
  -- options), opts.backend (extra core.backend lines).
  local function start_all(opts)
    opts = opts or {}
    local stub_opts = opts.stub or {}
    stub_opts.dir = dir
    stub = assert(oap.start(stub_opts))
    if opts.workload ~= false then
      workload = spawn(opts.workload or "cpu_ratio")
    end
    agent = rover_run.start_agent(dir, CONFIG, { port = stub.port, backend = opts.backend or "",
      heartbeat = HEARTBEAT_S, dir = rover_run.literal(dir), check = CHECK_S, flush = FLUSH_S })
  end

  -- Waits for fn() until `due` seconds from now (what the schedule above
  -- allows); see rover_run.await.
  local function await(what, due, fn)
    return rover_run.await(stub, agent, what, due, fn)
  end

  local function await_reported()
    return await("the workload (pid " .. tostring(workload) .. ") reported", REPORTED_S,
      function() return reported(stub, workload) end)
  end

  local function await_data(task_id, due)
    return await("data of task " .. task_id, due or TASK_DATA_S, function()
      local data = stub:task_data(task_id)
      return #data > 0 and data
    end)
  end

  local function task(fields)
    local now = clock.now_ms()
    local t = { taskId = "spec-task", updateTime = now, startTime = now, duration = 60,
      serviceName = "spec-service", targetType = "ON_CPU" }
    for k, v in pairs(fields or {}) do
      t[k] = v
    end
    return t
  end

  it("reports the workload with the configured names and properties, then keeps it alive", function()
    start_all()
    local p = await_reported()
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
    -- Once OAP gave it an id, the next heartbeat keeps it alive.
    await("a keepAlive", HEARTBEAT_S, function() return #stub:records("keepAlive") > 0 end)
  end)

  it("runs an ON_CPU task and sends the hot functions leaf first, the task on the first message", function()
    start_all()
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-on-cpu" }) })
    local records = await("3 collectProfilingData messages", TASK_DATA_S + 2 * FLUSH_S, function()
      local recs = stub:records("collectProfilingData")
      return #recs >= 3 and recs
    end)
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
    await_reported()
    local later_s = 5
    local start = clock.now_ms() + later_s * 1000
    stub:write_tasks({ task({ taskId = "spec-later", startTime = start }) })
    local data = await_data("spec-later", later_s + TASK_DATA_S)
    assert.is_true(tonumber(data[1].task.profilingStartTime) >= start)
    assert.is_true(data[1].record.time >= start)
  end)

  it("runs an OFF_CPU task: switch counts and blocked time of the sleeping workload", function()
    start_all({ workload = "sleeper" })
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-off-cpu", targetType = "OFF_CPU" }) })
    await("2 collectProfilingData messages", TASK_DATA_S + FLUSH_S,
      function() return #stub:records("collectProfilingData") >= 2 end)
    local switches, nanos, nap = 0, 0, false
    for _, d in ipairs(stub:task_data("spec-off-cpu")) do
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
    await_reported()
    -- The task must still run when the longer duration reaches the agent:
    -- the spec sends it once the first data is in (a flush after the start),
    -- the agent reads it at its next queryTasks.
    local first_s = FLUSH_S + CHECK_S + SLACK_S
    local t = task({ taskId = "spec-extend", duration = first_s })
    stub:write_tasks({ t })
    local started = tonumber(await_data("spec-extend")[1].task.profilingStartTime)
    t.duration, t.updateTime = first_s + 6, clock.now_ms()
    stub:write_tasks({ t })
    local past = started + (first_s + 2) * 1000
    local later = await("data of spec-extend past its first " .. first_s .. " s",
      (past - clock.now_ms()) / 1000 + FLUSH_S, function()
        for _, d in ipairs(stub:task_data("spec-extend")) do
          if tonumber(d.task.currentTime) > past then
            return d
          end
        end
      end)
    assert.same(started, tonumber(later.task.profilingStartTime))
  end)

  it("replaces a running task by a new one for the same process, keeping the old one's data", function()
    start_all()
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-first" }) })
    await_data("spec-first")
    local second_task = task({ taskId = "spec-second", updateTime = clock.now_ms() + 1 })
    stub:write_tasks({ task({ taskId = "spec-first" }), second_task })
    local second = await_data("spec-second")
    assert.matches("task spec%-first %(ON_CPU%) replaced by task spec%-second", agent:log_text())
    local first = stub:task_data("spec-first")
    assert.is_true(first[1].record.time <= second[1].record.time)
  end)

  it("runs a task whose process is only reported after the task was first seen", function()
    start_all({ workload = false })
    local id = oap.process_id("spec-service", "spec-instance", "cpu_ratio")
    stub:write_tasks({ task({ taskId = "spec-early", serviceName = false, processIds = { id } }) })
    await("2 queryTasks", FIRST_QUERY_S + CHECK_S, function() return #stub:records("queryTasks") >= 2 end)
    workload = spawn("cpu_ratio")
    -- The next heartbeat reports it; OAP's answer starts the waiting task.
    await_data("spec-early", HEARTBEAT_S + FLUSH_S)
  end)

  it("survives OAP going away mid-task and sends data again once it is back", function()
    start_all()
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-outage" }) })
    await_data("spec-outage")
    local port = stub.port
    stub:stop()
    os.execute("sleep 3")
    assert.is_true(agent:alive())
    local back = clock.now_ms()
    stub = assert(oap.start({ dir = dir, port = port }))
    await("data of spec-outage sent after OAP came back", RECONNECT_S + FLUSH_S, function()
      for _, d in ipairs(stub:task_data("spec-outage")) do
        if d.record.time >= back then
          return true
        end
      end
    end)
    assert.is_true(agent:alive())
  end)

  it("talks TLS and sends the Authentication header when configured", function()
    local code, _, err = e2e.run(string.format("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      .. "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s/key.pem -out %s/cert.pem", dir, dir))
    assert(code == 0, err)
    start_all({ stub = { auth = "spec-token", tls = { cert = dir .. "/cert.pem", key = dir .. "/key.pem" } },
      backend = string.format("    enable_TLS: true\n    ca_pem_path: %s/cert.pem\n"
        .. "    authentication: spec-token", dir) })
    await_reported()
    for _, r in ipairs(stub:records("reportProcesses")) do
      assert.same("spec-token", r.metadata.authentication)
    end
  end)

  it("sends dump counts that add up to each process's samples, then frees the task's kernel objects", function()
    start_all()
    idle = spawn("sleeper")
    await("both workloads reported", REPORTED_S, function()
      return reported(stub, workload) and reported(stub, idle)
    end)
    local fds_before = tonumber(sh("ls /proc/" .. agent.pid .. "/fd | wc -l"))
    local duration_s = 2
    -- OAP sends the task once for each process of the service, all with its id
    stub:write_tasks({ task({ taskId = "spec-count", duration = duration_s }) })
    await("task spec-count finished for both processes", CHECK_S + TICK_S + duration_s + TICK_S, function()
      local _, n = agent:log_text():gsub("task spec%-count %(ON_CPU%) finished", "")
      return n == 2
    end)
    local function taken(process)
      return agent:metric(string.format('moonrover_rover_task_samples{process="%s",task="spec-count"}',
        oap.process_id("spec-service", "spec-instance", process)))
    end
    local function sent()
      local n = 0
      for _, d in ipairs(stub:task_data("spec-count")) do
        n = n + d.record.message.onCPU.dumpCount
      end
      return n
    end
    -- Their last data goes out with the next flush, then they are closed.
    local sent_all = clock.wait_for(function()
      local busy, quiet = taken("cpu_ratio"), taken("sleeper")
      return busy and quiet and busy > 0 and sent() == busy + quiet
    end, FLUSH_S + SLACK_S)
    assert.is_truthy(sent_all, "sent " .. sent() .. ", taken " .. tostring(taken("cpu_ratio")) .. " (cpu_ratio) and "
      .. tostring(taken("sleeper")) .. " (sleeper)")
    assert.is_truthy(clock.wait_for(function()
      return tonumber(sh("ls /proc/" .. agent.pid .. "/fd | wc -l")) <= fds_before
    end, FLUSH_S + SLACK_S), "the finished task's perf events and BPF objects should be closed")
  end)

  it("names processes with a user's Lua naming module before the configured rules", function()
    os.execute("mkdir -p " .. dir .. "/scripts")
    write(dir .. "/scripts/process_naming.lua", string.format([[
local _M = {}
function _M.name(ctx)
  if ctx.process.exe_path == %q then
    return { layer = "GENERAL", serviceName = "named-in-lua", instanceName = ctx.rover.host_name,
      processName = "burner", labels = { "lua" } }
  end
end
return _M
]], dir .. "/workloads/cpu_ratio"))
    start_all()
    local p = await_reported()
    assert.same("named-in-lua", p.hostProcess.entity.serviceName)
    assert.same("burner", p.hostProcess.entity.processName)
    assert.same({ "lua" }, p.hostProcess.entity.labels)
  end)

  it("sends the running tasks' last data when the agent is stopped", function()
    start_all()
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-stop" }) })
    await_data("spec-stop")
    local stopped_at = clock.now_ms()
    assert.same(0, agent:stop())
    agent = nil
    local last = stub:task_data("spec-stop")
    assert.is_true(last[#last].record.time >= stopped_at, "a flush should follow the stop signal")
  end)

  it("keeps its agent id and running tasks across a hot reload", function()
    start_all()
    await_reported()
    stub:write_tasks({ task({ taskId = "spec-reload" }) })
    local started = tonumber(await_data("spec-reload")[1].task.profilingStartTime)
    local reloaded = clock.now_ms()
    agent:signal("HUP")
    -- Data well after the signal comes from the new version, which asks for
    -- the tasks again from its start.
    local after_s = 1.5
    await("data of spec-reload sent after the reload", after_s + FIRST_QUERY_S + TASK_DATA_S, function()
      for _, d in ipairs(stub:task_data("spec-reload")) do
        if d.record.time > reloaded + after_s * 1000 then
          return true
        end
      end
    end)
    for _, d in ipairs(stub:task_data("spec-reload")) do
      assert.same(started, tonumber(d.task.profilingStartTime))
    end
    local first_id = stub:records("queryTasks")[1].message.roverInstanceId
    for _, r in ipairs(stub:records("queryTasks")) do
      assert.same(first_id, r.message.roverInstanceId)
    end
    assert.matches("loaded %d script%(s%)", agent:log_text())
  end)
end)
