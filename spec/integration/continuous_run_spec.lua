-- Specs for the continuous-profiling wiring of the Rover drop-in
-- (rover/continuous/run.lua) on this very process, sampled for real: the
-- policy query and its answer, meters and a trigger's report, the task OAP
-- records handed to the task manager, a task that cannot run, and the
-- hand-over of a hot reload. OAP, the agent's timers, the process reporter
-- and the task manager are stand-ins that record what they are given.
local continuous = require("moonrover.rover.continuous.run")

local ffi = require("ffi")
pcall(ffi.cdef, "int getpid(void);")

local PID = ffi.C.getpid()
local THREADS_1_2_2 = [[[{"ServiceName":"spec","UUID":"u1","Profiling":{"OFF_CPU":{
  "PROCESS_THREAD_COUNT":{"Threshold":"1","Period":2,"Count":2}}}}]
]]

local function command(name, args)
  local list = {}
  for k, v in pairs(args) do
    list[#list + 1] = { key = k, value = v }
  end
  return { command = name, args = list }
end

-- What run.lua is given, recording every call; env.answer(rpc, response)
-- answers the oldest pending call of rpc.
local function environment()
  local env = { now = 1000, wall = 1700000000000, calls = {}, pending = {}, added = {}, logs = {}, counters = {} }
  env.agent = {
    log = setmetatable({}, { __index = function(_, level)
      return function(fmt, ...) env.logs[#env.logs + 1] = level .. " " .. string.format(fmt, ...) end
    end }),
    on = function() error("no network tracer in this spec") end,
    now = function() return env.now end,
    counter = function(name, _, labels)
      local key = name .. "/" .. labels.target
      env.counters[key] = env.counters[key] or { n = 0, inc = function(c) c.n = c.n + 1 end }
      return env.counters[key]
    end,
  }
  local function record(rpc)
    return function(_, message, callback)
      env.calls[#env.calls + 1] = { rpc = rpc, message = message }
      env.pending[#env.pending + 1] = { rpc = rpc, callback = callback }
    end
  end
  env.client = { query_policies = record("queryPolicies"), report_profiling_task = record("reportProfilingTask"),
    collect_meter_batch = record("collectMeterBatch") }
  env.start_ns, env.service = 5, "spec"
  env.reporter = { reported = function()
    return { { id = "p-self", process = { pid = PID, start_ns = env.start_ns, entity = { serviceName = env.service,
      instanceName = "i", processName = "luajit", layer = "GENERAL", labels = {} } } } }
  end }
  env.tasks = { add = function(_, task) env.added[#env.added + 1] = task end }
  function env.answer(rpc, response)
    for i, p in ipairs(env.pending) do
      if p.rpc == rpc then
        table.remove(env.pending, i)
        p.callback(response)
        return
      end
    end
    error("no pending " .. rpc)
  end
  function env.of(rpc)
    local out = {}
    for _, c in ipairs(env.calls) do
      out[#out + 1] = c.rpc == rpc and c.message or nil
    end
    return out
  end
  function env.run(state)
    return continuous.new({ agent = env.agent, client = env.client, reporter = env.reporter, tasks = env.tasks,
      regex = function() error("no regex in this spec") end, now_ms = function() return env.wall end,
      call = function(_, fn) return function(response) if fn then fn(response) end end end, state = state,
      settings = { meter_prefix = "rover_con_p", fetch_interval = 1, check_interval = 5, execute_duration = 60,
        silence_duration = 600 } })
  end
  -- Samples one second, then checks.
  function env.second(run)
    env.now = env.now + 1
    run:sample()
  end
  return env
end

local function with_policy(env)
  local run = env.run()
  run:query()
  env.answer("queryPolicies", { commands = { command("ContinuousProfilingPolicyQuery",
    { ServiceWithPolicyJSON = THREADS_1_2_2 }) } })
  return run
end

describe("continuous profiling in the drop-in", function()
  it("asks for the reported services' policies, with the UUID once it has one", function()
    local env = environment()
    with_policy(env):query()
    local queries = env.of("queryPolicies")
    assert.same({ policies = { { serviceName = "spec", uuid = "" } } }, queries[1])
    assert.same({ policies = { { serviceName = "spec", uuid = "u1" } } }, queries[2])
  end)

  it("sends meters, reports a trigger and hands the task OAP recorded to the task manager", function()
    local env = environment()
    local run = with_policy(env)
    env.second(run)
    env.second(run)
    run:check()
    local meters = env.of("collectMeterBatch")[1]
    assert.same("rover_con_p_process_thread_count", meters[1].meterData[1].singleValue.name)
    local report = env.of("reportProfilingTask")[1]
    assert.same({ "spec", "i", "luajit", {} }, { report.serviceName, report.instanceName, report.processName,
      report.offCPU })
    env.answer("reportProfilingTask", { commands = { command("ContinuousProfilingReportTask", { TaskId = "t-1" }) } })
    assert.same({ id = "t-1", process_ids = { "p-self" }, update_time = 0, start_time = env.wall,
      duration_ms = 60000, trigger = "CONTINUOUS_PROFILING", target = "OFF_CPU", origin = "continuous" },
      env.added[1])
    assert.same(1, env.counters["moonrover_rover_continuous_triggers_total/OFF_CPU"].n)
    env.second(run)
    run:check()
    assert.same(1, #env.of("reportProfilingTask"))
  end)

  it("reports again at the next check when OAP gave no task, and after a minute when the task could not run",
    function()
      local env = environment()
      local run = with_policy(env)
      env.second(run)
      env.second(run)
      run:check()
      env.answer("reportProfilingTask", { commands = {} })
      env.second(run)
      run:check()
      assert.same(2, #env.of("reportProfilingTask"))
      env.answer("reportProfilingTask", { commands = { command("ContinuousProfilingReportTask", { TaskId = "t" }) } })
      run:task_failed(env.added[1])
      run:check()
      assert.same(2, #env.of("reportProfilingTask"))
    end)

  it("hands its policies, silences and tasks to the next version, which needs no query to go on", function()
    local env = environment()
    local run = with_policy(env)
    env.second(run)
    env.second(run)
    run:check()
    env.answer("reportProfilingTask", { commands = { command("ContinuousProfilingReportTask", { TaskId = "t-1" }) } })
    local state = run:hand_over()
    local next_version = env.run(state)
    assert.same("t-1", env.added[2].id)
    env.second(next_version)
    env.second(next_version)
    next_version:check()
    assert.same(1, #env.of("reportProfilingTask"))
    assert.same(2, #env.of("collectMeterBatch"))
    next_version:query()
    assert.same({ serviceName = "spec", uuid = "u1" }, env.of("queryPolicies")[2].policies[1])
  end)
  it("forgets a pid's HTTP seconds when the pid is another process's (a restart)", function()
    local env = environment()
    local run = with_policy(env)
    run:check()
    run.series:add({ pid = PID, role = "server", status = 500, target = "/", response_end_ns = 999e9, duration_ns = 1 })
    run:check()
    assert.is_not_nil(run.series:slot(PID, 999))
    env.start_ns = 6
    run:check()
    assert.is_nil(run.series:slot(PID, 999))
  end)
  it("runs the check type and policy of a continuous_policies module (the example of rover-compatibility.md)",
    function()
      local doc = assert(io.open((os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/docs/rover-compatibility.md"))
        :read("*a")
      local example = assert(doc:match("```lua\n(%-%- continuous_policies%.lua.-)```"))
      package.preload.continuous_policies = assert(loadstring(example, "=continuous_policies.lua"))
      local env = environment()
      env.service = "orders"
      local run = env.run()
      package.loaded.continuous_policies, package.preload.continuous_policies = nil, nil
      env.second(run)
      run:check()
      local m = env.of("collectMeterBatch")[1][1].meterData[1]
      assert.same({ "orders", "rover_con_p_process_rss_mb" }, { m.service, m.singleValue.name })
      assert.is_true(m.singleValue.value > 1)
    end)
end)
