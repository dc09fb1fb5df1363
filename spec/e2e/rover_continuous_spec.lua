-- End-to-end specs for the Rover drop-in's continuous profiling against the
-- stand-in OAP: a CPU policy on a busy workload fires one ON_CPU task whose
-- data arrives, its silence holds the next trigger back, and an HTTP error
-- rate policy fires once a real server starts answering 500.
local e2e = require("support.e2e")
local lua_api_doc = require("support.lua_api_doc")
local oap = require("support.oap")
local rover_run = require("support.rover_run")
local servers = require("support.servers")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The periods CONFIG sets, in seconds.
local HEARTBEAT_S, POLICY_S, CHECK_S, EXECUTE_S = 1, 1, 2, 4
-- From the agent's start to a policy in effect: the first report after
-- 0.5 s and OAP's answer at the next heartbeat, then the next queryPolicies.
local POLICY_IN_EFFECT_S = 0.5 + HEARTBEAT_S + 1 + POLICY_S
-- From a policy in effect to its trigger's report: Period seconds of
-- samples, then the next check.
local TRIGGER_S = 5 + CHECK_S

local CONFIG = [[
core:
  backend:
    addr: 127.0.0.1:<port>
process_discovery:
  heartbeat_period: <heartbeat>s
  kubernetes:
    active: false
  scanner:
    regex:
      - match_cmd: "<match>"
        layer: OS_LINUX
        service_name: <service>
        instance_name: spec-instance
        process_name: "{{.Process.ExeName}}"
        labels: ""
profiling:
  check_interval: <policy>s
  flush_interval: 1s
  continuous:
    fetch_interval: 1s
    check_interval: <check>s
    trigger:
      execute_duration: <execute>s
      silence_duration: 10m
]]

local literal = rover_run.literal

-- The example of docs/lua-api.md's "HTTP series" section.
local function lua_api_example()
  local example = lua_api_doc.examples("## HTTP series:")[1]
  return assert(example and example:match("^%-%- Warns, every 10 s, about the servers") and example,
    "no HTTP series example")
end

describe("Rover drop-in continuous profiling (end to end, stand-in OAP)", function()
  local dir, stub, agent, workload, service, client

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    rover_run.stop(agent, stub)
    agent, stub = nil, nil
    e2e.kill(workload)
    e2e.kill(client)
    workload, client = nil, nil
    if service then
      service:remove()
      service = nil
    end
    e2e.rmdir(dir)
  end)

  -- scripts: file name -> text of user scripts to run beside the drop-in.
  local function start_agent(values, extra, scripts)
    values.port, values.heartbeat, values.policy, values.check, values.execute = stub.port, HEARTBEAT_S, POLICY_S,
      CHECK_S, EXECUTE_S
    agent = rover_run.start_agent(dir, CONFIG, values, extra, scripts)
  end

  -- The values of one meter the stand-in received, for failure messages.
  local function meter_values(name)
    local out = {}
    for _, m in ipairs(stub:meters(name)) do
      out[#out + 1] = string.format("%.0f", m.value)
    end
    return name .. ": " .. table.concat(out, " ")
  end

  -- Waits for fn() (see rover_run.await); fails saying what had happened,
  -- the policies' meters included.
  local function await(what, due, fn)
    return rover_run.await(stub, agent, what, due, fn, function()
      return meter_values("rover_con_p_process_cpu") .. "\n" .. meter_values("rover_con_p_http_error_rate")
    end)
  end

  local function await_reports(n, due)
    return await(n .. " reportProfilingTask", due, function()
      local reports = stub:profiling_reports()
      return #reports >= n and reports
    end)
  end

  it("fires one ON_CPU task for a busy process, whose data arrives, and silences the process after it, across a "
    .. "hot reload", function()
    stub = assert(oap.start({ dir = dir }))
    stub:write_policies("spec-busy", { ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 5, Count = 3 } } })
    workload = e2e.spawn_copy(dir, "cpu_ratio", "120")
    -- Other suites share the machine's cores: at nice -10 the workload
    -- keeps most of one core (its CPU share is what the policy judges).
    assert(e2e.run("renice -n -10 -p " .. workload) == 0, "renice failed")
    start_agent({ service = "spec-busy", match = "^" .. literal(dir) .. "/workloads/cpu_ratio " })
    local reports = await_reports(1, POLICY_IN_EFFECT_S + TRIGGER_S)
    local r = reports[1].report
    assert.same({ "spec-busy", "spec-instance", "cpu_ratio", "OS_LINUX" },
      { r.serviceName, r.instanceName, r.processName, r.layer })
    assert.same({}, r.onCPU)
    assert.same(EXECUTE_S, r.duration)
    assert.same("ProcessCPU", r.causes[1].type)
    assert.same(50, r.causes[1].singleValue.threshold)
    assert.is_true(r.causes[1].singleValue.current >= 50)
    local task_id = reports[1].taskId
    await("data of the continuous task " .. task_id, 2 + CHECK_S, function() return #stub:task_data(task_id) > 0 end)
    local cpu = stub:meters("rover_con_p_process_cpu")
    assert.is_true(#cpu > 0)
    assert.same({ "spec-busy", "cpu_ratio", "OS_LINUX" }, { cpu[1].service, cpu[1].labels.process_name,
      cpu[1].labels.layer })
    -- A hot reload hands the policy, the silence and the running task to
    -- the new version. The task ends after EXECUTE_S; the process stays
    -- busy, and its windows over the threshold, through checks past that:
    -- the silence (10 min) holds a second trigger back.
    agent:signal("HUP")
    await("the reload", 2, function() return agent:log_text():find("loaded 2 script(s) in", 1, true) end)
    local seen = #stub:meters("rover_con_p_process_cpu")
    local checks = math.ceil((EXECUTE_S + 5) / CHECK_S) + 2
    await(checks .. " more checks", checks * CHECK_S, function()
      return #stub:meters("rover_con_p_process_cpu") >= seen + checks
    end)
    assert.same(1, #stub:profiling_reports(), stub:summary())
    assert.is_truthy(agent:log_text():find("task " .. task_id .. " (ON_CPU) finished", 1, true), agent:log_tail())
  end)

  it("fires NETWORK on HTTP_ERROR_RATE once a Python server starts answering 500, and runs the task", function()
    stub = assert(oap.start({ dir = dir }))
    stub:write_policies("spec-http", { NETWORK = { HTTP_ERROR_RATE = { Threshold = "50", Period = 5, Count = 2 } } })
    service = servers.service(dir, "continuous")
    local marker = "/case-" .. dir:match("[^.]+$")
    local server = servers.http_server(service, dir, { "/ok=200", "/fail=500", marker .. "=200" })
    start_agent({ service = "spec-http", match = "http_server[.]py [0-9]+ .*" .. literal(marker) .. "=200" },
      " --network on", { ["http_errors.lua"] = lua_api_example() })
    local function requests(path)
      local paths = {}
      for i = 1, 3000 do
        paths[i] = path
      end
      local cmd = string.format("%s %s %d %s --pause 0.02 %s", servers.PYTHON,
        e2e.quote(servers.SUPPORT .. "/http_client.py"), server.port, e2e.quote(dir .. "/client.progress"),
        table.concat(paths, " "))
      local p = assert(io.popen(cmd .. " >/dev/null 2>&1 & echo $!"))
      client = tonumber(p:read("*l"))
      p:close()
    end
    requests("/ok")
    -- Answers of 200 only: the error rate is measured (0) and nothing fires.
    await("rover_con_p_http_error_rate meters of 0", POLICY_IN_EFFECT_S + TRIGGER_S, function()
      local zeros = 0
      for _, m in ipairs(stub:meters("rover_con_p_http_error_rate")) do
        zeros = zeros + (m.value == 0 and 1 or 0)
      end
      return zeros >= 3
    end)
    assert.same(0, #stub:profiling_reports())
    e2e.kill(client)
    requests("/fail")
    local report = await_reports(1, TRIGGER_S + 2)[1]
    local r = report.report
    assert.same({ samplingURIRegexes = { "" } }, r.network)
    assert.same("HTTPErrorRate", r.causes[1].type)
    assert.same("", r.causes[1].uri.regex)
    assert.same(50, r.causes[1].uri.threshold)
    assert.is_true(r.causes[1].uri.current >= 50)
    local m = stub:meters("rover_con_p_http_error_rate")[1]
    assert.same({ "spec-http", "global" }, { m.service, m.labels.uri })
    -- The NETWORK task OAP recorded runs: the server's requests are metered.
    await("rover_net_p_http1_request_counter of task " .. report.taskId, 2 * CHECK_S, function()
      return #stub:meters("rover_net_p_http1_request_counter") > 0
    end)
    -- The HTTP series example of docs/lua-api.md, run as a user script, sees the same server.
    await("the lua-api.md example's warning about pid " .. server.pid, 10, function()
      return agent:log_text():find("[http_errors] pid " .. server.pid .. ": ", 1, true)
    end)
  end)
end)
