-- End-to-end specs for what the Rover drop-in says about itself, against the
-- stand-in OAP: how many processes its rules match, OAP going away and
-- coming back (/healthz, metrics, one log line each way, however many calls
-- fail), a stock configuration that has nothing to do, and the files of
-- every Rover release starting the module.
local agent_run = require("support.agent_run")
local clock = require("support.clock")
local e2e = require("support.e2e")
local oap = require("support.oap")
local rover_run = require("support.rover_run")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local RELEASES = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/fixtures/rover_configs/"

-- The periods CONFIG sets, in seconds.
local HEARTBEAT_S, CHECK_S, FLUSH_S = 1, 1, 1
-- The drop-in's schedule (see spec/e2e/rover_spec.lua): the first report
-- after 0.5 s and the first queryTasks after 1 s from the start; a task
-- starts at the tick after the queryTasks that brings it; the status
-- metrics are published every second; /healthz is refreshed every second;
-- the channel reconnects within gRPC's backoff, capped at 10 s plus jitter.
local FIRST_QUERY_S, TICK_S, HEALTH_S, RECONNECT_S = 1, 1, 1, 12

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
      - match_cmd: "^<dir>/workloads/cpu_ratio "
        service_name: status-service
        instance_name: status-instance
profiling:
  check_interval: <check>s
  flush_interval: <flush>s
]]

-- How many lines of text match the Lua pattern.
local function count(text, pattern)
  local n = 0
  for line in text:gmatch("[^\n]+") do
    if line:find(pattern) then
      n = n + 1
    end
  end
  return n
end

describe("the Rover drop-in's status (end to end, stand-in OAP)", function()
  local dir, stub, agent, workload

  before_each(function()
    dir = e2e.tmpdir()
    os.execute("mkdir -p " .. dir .. "/scripts")
  end)

  after_each(function()
    rover_run.stop(agent, stub)
    agent, stub = nil, nil
    e2e.kill(workload)
    workload = nil
    e2e.rmdir(dir)
  end)

  -- Waits for fn() (see rover_run.await); fails saying what was seen.
  local function await(what, due, fn)
    return rover_run.await(stub, agent, what, due, fn)
  end

  -- /healthz: its HTTP status and body.
  local function health()
    local code, out = e2e.run(string.format("curl -s --max-time 5 -w '\\n%%{http_code}' http://127.0.0.1:%d/healthz",
      agent.port))
    if code ~= 0 then
      return nil
    end
    local body, status = out:match("^(.*)\n(%d+)$")
    return tonumber(status), body
  end

  local function health_line()
    local _, body = health()
    return body and body:match("^([^\n]*)")
  end

  local function metric(series, want)
    return function() return agent:metric(series) == want end
  end

  it("marks /healthz degraded while OAP is away, and logs one line when it goes and one when it is back", function()
    stub = assert(oap.start({ dir = dir }))
    workload = e2e.spawn_copy(dir, "cpu_ratio", "120")
    agent = rover_run.start_agent(dir, CONFIG, { port = stub.port, heartbeat = HEARTBEAT_S, check = CHECK_S,
      flush = FLUSH_S, dir = rover_run.literal(dir) })

    await("the workload reported and connected", HEARTBEAT_S + TICK_S, function()
      return agent:metric("moonrover_rover_processes_reported") == 1 and agent:metric("moonrover_oap_connected") == 1
    end)
    assert.equal(1, agent:metric("moonrover_rover_processes_matched"))
    assert.matches("process discovery: 1 process matches %(1 rule in process_discovery.scanner.regex",
      agent:log_text())
    local now = clock.now_ms()
    stub:write_tasks({ { taskId = "status-task", updateTime = now, startTime = now, duration = 120,
      serviceName = "status-service", targetType = "ON_CPU" } })
    await("the task running", CHECK_S + TICK_S + TICK_S, metric("moonrover_rover_tasks_running", 1))

    local port = stub.port
    stub:stop()
    local degraded = await("/healthz degraded", HEARTBEAT_S + HEALTH_S, function()
      local code, text = health()
      return text and text:find("^degraded") and { code = code, body = text }
    end)
    assert.equal(200, degraded.code)
    assert.matches("^degraded: OAP unreachable since %d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ %(127%.0%.0%.1:" .. port
      .. "%)\nscripts: ", degraded.body)
    -- Many heartbeats, queries and flushes fail while it is away.
    await("5 failed reports and flushes", 5 * HEARTBEAT_S, function()
      return (agent:metric('moonrover_oap_errors_total{code="UNAVAILABLE",rpc="reportProcesses"}') or 0) >= 5
        and (agent:metric('moonrover_oap_errors_total{code="UNAVAILABLE",rpc="collectProfilingData"}') or 0) >= 5
    end)
    assert.equal(0, agent:metric("moonrover_oap_connected"))
    assert.is_true(agent:metric('moonrover_oap_last_error_timestamp_seconds{code="UNAVAILABLE",rpc="reportProcesses"}')
      >= now / 1000)
    local log = agent:log_text()
    local went = "%[rover%] OAP at 127%.0%.0%.1:" .. port .. " is unreachable: %w+ failed: UNAVAILABLE: "
    assert.equal(1, count(log, went), log)
    assert.equal(0, count(log, "still unreachable"), "no reminder within the first minute")
    assert.equal(0, count(log, "status %d"), "gRPC statuses are named, not numbered")
    assert.equal(0, count(log, "error %d"))

    stub = assert(oap.start({ dir = dir, port = port }))
    await("/healthz ok again", RECONNECT_S + HEARTBEAT_S + HEALTH_S, function() return health_line() == "ok" end)
    await("moonrover_oap_connected 1", TICK_S, metric("moonrover_oap_connected", 1))
    log = agent:log_text()
    assert.equal(1, count(log, "%[rover%] OAP at 127%.0%.0%.1:" .. port .. " answers again, after %d+s; %d+ calls %("
      .. "collectProfilingData %d+, [%w %d,]*reportProcesses %d+%) failed meanwhile"), log)
    assert.equal(1, count(log, "is unreachable"), log)
  end)

  it("says at once that a stock configuration reports nothing and that OAP is unreachable", function()
    -- Port 1 on the loopback: nothing listens there.
    agent = rover_run.start_agent(dir, "core:\n  backend:\n    addr: 127.0.0.1:1\n", {})
    await("both warnings", FIRST_QUERY_S, function()
      local log = agent:log_text()
      return log:find("no process matches", 1, true) and log:find("is unreachable", 1, true)
    end)
    local log = agent:log_text()
    assert.matches("warn  %[rover%] process discovery: no process matches %(0 rules in process_discovery%.scanner%."
      .. "regex, no process_naming%.lua in the scripts directory%), so nothing is reported to OAP", log)
    assert.matches("warn  %[rover%] OAP at 127%.0%.0%.1:1 is unreachable: queryTasks failed: UNAVAILABLE: ", log)
    await("/healthz degraded", HEALTH_S, function()
      return (health_line() or ""):find("^degraded: OAP unreachable since ")
    end)
    assert.equal(0, agent:metric("moonrover_rover_processes_matched"))
  end)

  for _, release in ipairs({ "0.3", "0.4", "0.5", "0.6", "0.7", "main" }) do
    it("runs the Rover module with Rover " .. release .. "'s own configuration file", function()
      stub = assert(oap.start({ dir = dir }))
      local file = RELEASES .. "rover-" .. release .. ".yaml"
      -- Rover 0.6 and later turn Kubernetes discovery on; this machine is no node.
      agent = agent_run.start(dir, dir .. "/scripts", "--config " .. e2e.quote(file),
        "ROVER_BACKEND_ADDR=" .. stub:address() .. " ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false")
      assert.is_truthy(agent.port, agent:log_text())
      await("a queryTasks", FIRST_QUERY_S, function() return #stub:records("queryTasks") > 0 end)
      local log = agent:log_text()
      assert.matches("info  %[rover%] config: core%.backend%.check_period is read and checked but not acted on: ", log)
      assert.not_matches("config: process_discovery%.kubernetes", log)
      if release == "0.3" or release == "0.4" or release == "0.5" then
        assert.matches("no process matches %(process_discovery%.scanner%.mode is AGENT_SENSOR, which moonrover does "
          .. "not implement", log)
      end
      assert.not_matches(" error %[", log)
    end)
  end
end)
