-- Specs for the Rover-compatible profiling task policy, with injected time,
-- process lookup and fake runners: every rule of Rover's task life cycle
-- (identity, delayed start, extension, replacement, flush) and a spec for
-- each of its task-handling defects that moonrover must not repeat.
local command = require("moonrover.rover.task_command")
local manager = require("moonrover.rover.task_manager")
local tables = require("support.tables")

local function task_cmd(fields)
  local f = {
    SerialNumber = "5f0c-uuid",
    TaskId = "t1",
    ProcessId = "p1",
    TaskUpdateTime = "1000",
    TriggerType = "FIXED_TIME",
    TargetType = "ON_CPU",
    TaskStartTime = "0",
    ExtensionConfigJSON = "null",
    FixedTriggerDuration = "60",
  }
  for k, v in pairs(fields or {}) do
    f[k] = v
  end
  local args = {}
  for k, v in pairs(f) do
    if v ~= false then
      args[#args + 1] = { key = k, value = v }
    end
  end
  return { command = "EBPFProfilingTaskQuery", args = args }
end

describe("task_command.parse", function()
  it("reads what OAP sends, SerialNumber and a null extension included", function()
    local t = assert(command.parse(task_cmd({ ProcessId = "b,a", TaskStartTime = "5000" })))
    assert.same("t1", t.id)
    assert.same({ "a", "b" }, t.process_ids)
    assert.same(1000, t.update_time)
    assert.same(5000, t.start_time)
    assert.same(60000, t.duration_ms)
    assert.same("ON_CPU", t.target)
    assert.is_nil(t.extension_json)
  end)

  it("keeps a real extension config", function()
    local t = assert(command.parse(task_cmd({ ExtensionConfigJSON = '{"NetworkSamplings":[]}' })))
    assert.same('{"NetworkSamplings":[]}', t.extension_json)
  end)

  it("rejects missing keys, unknown types and bad numbers with the reason", function()
    assert.same("argument TaskId is missing", select(2, command.parse(task_cmd({ TaskId = false }))))
    assert.matches("only FIXED_TIME", select(2, command.parse(task_cmd({ TriggerType = "CONTINUOUS_PROFILING" }))))
    assert.matches("target type CPU is unknown", select(2, command.parse(task_cmd({ TargetType = "CPU" }))))
    assert.matches("FixedTriggerDuration", select(2, command.parse(task_cmd({ FixedTriggerDuration = "0" }))))
    assert.matches("integers", select(2, command.parse(task_cmd({ TaskStartTime = "soon" }))))
    assert.is_nil(command.parse({ command = "Other", args = {} }))
  end)

  it("gives the same identity whatever the order of process ids", function()
    local a = assert(command.parse(task_cmd({ ProcessId = "p2,p1" })))
    local b = assert(command.parse(task_cmd({ ProcessId = "p1,p2" })))
    assert.same(command.identity(a), command.identity(b))
    assert.is_true(command.same(a, b))
  end)
end)

-- A fake runner: counts its lifecycle calls; collect() hands out what the
-- spec queued with :produce().
local function fake_runner(task)
  local r = { task = task, starts = 0, stops = 0, closes = 0, queued = {} }
  function r:start() self.starts = self.starts + 1 return true end
  function r:stop() self.stops = self.stops + 1 end
  function r:close() self.closes = self.closes + 1 end
  function r:produce(n)
    for i = 1, n do
      self.queued[#self.queued + 1] = { stack = "s" .. i, count = i }
    end
  end
  function r:collect()
    local out = self.queued
    self.queued = {}
    return out
  end
  return r
end

local function setup(opts)
  local env = { now = 0, known = { p1 = "proc1", p2 = "proc2" }, runners = {}, logs = {} }
  env.m = manager.new({
    now = function() return env.now end,
    resolve = function(id) return env.known[id] end,
    new_runner = function(task, processes)
      if opts and opts.fail then
        return nil, "no BPF here"
      end
      local r = fake_runner(task)
      r.processes = processes
      env.runners[#env.runners + 1] = r
      return r
    end,
    log = function(level, fmt, ...) env.logs[#env.logs + 1] = level .. ": " .. string.format(fmt, ...) end,
    on_failed = function(task, why) env.failed = { task.id, why } end,
  })
  return env
end

local function metadata_of(messages)
  local out = {}
  for _, m in ipairs(messages) do
    if m.task then
      out[#out + 1] = m.task
    end
  end
  return out
end

describe("task_manager", function()
  it("starts a task at once when its start time has passed, and stops it after its duration", function()
    local env = setup()
    env.now = 10000
    env.m:on_commands({ task_cmd({ TaskStartTime = "9000", FixedTriggerDuration = "60" }) })
    assert.same(1, #env.runners)
    local r = env.runners[1]
    assert.same(1, r.starts)
    assert.same({ "proc1" }, r.processes)
    env.now = 10000 + 59999
    env.m:tick()
    assert.same(0, r.stops)
    env.now = 10000 + 60000
    env.m:tick()
    assert.same(1, r.stops)
  end)

  it("honours a start time in the future (Rover started such tasks at once)", function()
    local env = setup()
    env.now = 1000
    env.m:on_commands({ task_cmd({ TaskStartTime = "6000" }) })
    assert.same(0, #env.runners)
    env.now = 5999
    env.m:tick()
    assert.same(0, #env.runners)
    env.now = 6000
    env.m:tick()
    assert.same(1, #env.runners)
    -- the duration counts from the actual start
    env.now = 6000 + 60000 - 1
    env.m:tick()
    assert.same(0, env.runners[1].stops)
    env.now = 6000 + 60000
    env.m:tick()
    assert.same(1, env.runners[1].stops)
  end)

  it("extends a running task when OAP re-sends it with a longer duration, without a second runner", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ FixedTriggerDuration = "60" }) })
    env.now = 50000
    env.m:on_commands({ task_cmd({ FixedTriggerDuration = "660", TaskUpdateTime = "2000" }) })
    env.m:on_commands({ task_cmd({ FixedTriggerDuration = "660", TaskUpdateTime = "2000" }) })
    assert.same(1, #env.runners)
    env.now = 600000
    env.m:tick()
    assert.same(0, env.runners[1].stops)
    env.now = 660000
    env.m:tick()
    assert.same(1, env.runners[1].stops)
    assert.same(2000, env.m.latest_update)
  end)

  it("does not block or duplicate when a waiting task is re-delivered many times", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ TaskStartTime = "100000" }) })
    for _ = 1, 10 do
      env.m:on_commands({ task_cmd({ TaskStartTime = "100000" }) })
    end
    assert.same(0, #env.runners)
    env.now = 100000
    env.m:tick()
    assert.same(1, #env.runners)
  end)

  it("replaces a task by a new one for the same process, flushing the old one's last data first", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ TaskId = "old" }) })
    local old = env.runners[1]
    old:produce(2)
    env.now = 10000
    env.m:on_commands({ task_cmd({ TaskId = "new", TaskUpdateTime = "2000" }) })
    assert.same(1, old.stops)
    assert.same(2, #env.runners)
    env.runners[2]:produce(1)
    local messages = env.m:flush()
    assert.same(3, #messages)
    local ids = {}
    for _, md in ipairs(metadata_of(messages)) do
      ids[#ids + 1] = md.taskId
    end
    table.sort(ids)
    assert.same({ "new", "old" }, ids)
    env.m:flushed(true)
    assert.same(1, old.closes)
    assert.same(0, env.runners[2].closes)
  end)

  it("waits for a process that is not known yet, then runs the task (not lost)", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ ProcessId = "p9", TaskUpdateTime = "1500" }),
      task_cmd({ TaskId = "t2", ProcessId = "p1", TaskUpdateTime = "1700" }) })
    assert.same(1, #env.runners)
    assert.same(1700, env.m.latest_update)
    env.now = 5000
    env.m:tick()
    assert.same(1, #env.runners)
    env.known.p9 = "proc9"
    env.now = 6000
    env.m:tick()
    assert.same(2, #env.runners)
    assert.same({ "proc9" }, env.runners[2].processes)
  end)

  it("creates no runner for a task that has already expired", function()
    local env = setup()
    env.now = 1000000
    env.m:on_commands({ task_cmd({ TaskStartTime = "0", FixedTriggerDuration = "60", TaskUpdateTime = "900" }) })
    assert.same(0, #env.runners)
    assert.same(900, env.m.latest_update)
  end)

  it("puts the task metadata on the first message of each task only", function()
    local env = setup()
    env.now = 2000
    env.m:on_commands({ task_cmd({ TaskId = "a", ProcessId = "p1" }), task_cmd({ TaskId = "b", ProcessId = "p2" }) })
    env.runners[1]:produce(3)
    env.runners[2]:produce(2)
    env.now = 7000
    local messages = env.m:flush()
    assert.same(5, #messages)
    local md = metadata_of(messages)
    assert.same(2, #md)
    for _, m in ipairs(md) do
      assert.same(2000, m.profilingStartTime)
      assert.same(7000, m.currentTime)
    end
    local first_of = {}
    for i, m in ipairs(messages) do
      if m.task then
        first_of[m.task.taskId] = i
      end
    end
    assert.same(1, math.min(first_of.a, first_of.b))
    env.m:flushed(true)
    assert.same({}, env.m:flush())
  end)

  it("keeps the data of a failed send and sends it again first", function()
    local env = setup()
    env.m:on_commands({ task_cmd() })
    env.runners[1]:produce(2)
    local first = env.m:flush()
    env.m:flushed(false)
    env.runners[1]:produce(1)
    local second = env.m:flush()
    assert.same(3, #second)
    assert.same(first[1].stack, second[1].stack)
    assert.is_truthy(second[1].task)
    assert.is_truthy(second[3].task)
    env.m:flushed(true)
    assert.same({}, env.m:flush())
  end)

  it("bounds what it keeps after failed sends and counts what it dropped", function()
    local env = setup()
    env.m:on_commands({ task_cmd() })
    for _ = 1, 3 do
      env.runners[1]:produce(9000)
      env.m:flush()
      env.m:flushed(false)
    end
    assert.is_true(env.m.dropped > 0)
    assert.is_true(#env.m:flush() <= 20000 + 0)
  end)

  it("sends a finished task's last interval, then closes its runner once", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ FixedTriggerDuration = "60" }) })
    local r = env.runners[1]
    r:produce(1)
    env.now = 60000
    env.m:tick()
    r:produce(2)
    local messages = env.m:flush()
    assert.same(3, #messages)
    env.m:flushed(true)
    assert.same(1, r.closes)
    env.m:flushed(true)
    assert.same(1, r.closes)
    assert.same({}, env.m:states())
  end)

  it("does not lose the data of a task that finishes while a flush is in flight", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ FixedTriggerDuration = "60" }) })
    local r = env.runners[1]
    r:produce(1)
    env.m:flush()
    env.now = 60000
    env.m:tick()
    r:produce(4)
    env.m:flushed(true)
    assert.same(0, r.closes)
    assert.same(4, #env.m:flush())
    env.m:flushed(true)
    assert.same(1, r.closes)
  end)

  it("logs and drops a task whose runner cannot start, without retrying every tick", function()
    local env = setup({ fail = true })
    env.m:on_commands({ task_cmd() })
    env.m:tick()
    env.m:tick()
    local errors = 0
    for _, l in ipairs(env.logs) do
      if l:match("^error: task t1 %(ON_CPU%) cannot start: no BPF here") then
        errors = errors + 1
      end
    end
    assert.same(1, errors)
    assert.same({}, env.m:states())
  end)

  it("stops every task at shutdown and flushes their data", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ TaskId = "a" }), task_cmd({ TaskId = "b", ProcessId = "p2" }) })
    env.runners[1]:produce(1)
    env.m:stop_all()
    assert.same(1, env.runners[1].stops)
    assert.same(1, env.runners[2].stops)
    assert.same(1, #env.m:flush())
    env.m:flushed(true)
    assert.same(1, env.runners[1].closes)
    assert.same(1, env.runners[2].closes)
  end)

  it("ignores commands it cannot read and says why", function()
    local env = setup()
    env.m:on_commands({ task_cmd({ TargetType = "GPU" }), { command = "SomethingElse", args = {} } })
    assert.same(0, #env.runners)
    assert.matches("ignored a task command: target type GPU is unknown", env.logs[1])
    assert.same(1, #env.logs)
  end)
end)

describe("task_manager hand-over across a hot reload", function()
  it("takes its data back when the reload is refused, and sends it next", function()
    local env = setup()
    env.m:on_commands({ task_cmd() })
    env.runners[1]:produce(2)
    local state = env.m:hand_over()
    assert.same({}, env.m:flush())
    env.m:flushed(true)
    env.m:take_back(state)
    env.runners[1]:produce(1)
    assert.same(3, #env.m:flush())
    env.m:flushed(true)
    assert.same({}, env.m:flush())
  end)

  it("passes unsent data and start times to the next version", function()
    local old = setup()
    old.now = 1000
    old.m:on_commands({ task_cmd({ FixedTriggerDuration = "60" }) })
    old.runners[1]:produce(2)
    old.now = 4000
    local state = old.m:hand_over()
    assert.same(0, old.runners[1].stops, "a refused reload must find the old tasks still running")
    assert.same(2, #state.messages)
    assert.same({}, old.m:flush(), "handed-over data is not sent twice")
    assert.same(1000, state.messages[1].task.profilingStartTime)

    local new = setup()
    new.now = 5000
    new.m:take_over(require("moonrover.lib.serialize").decode(require("moonrover.lib.serialize").encode(state)))
    new.m:on_commands({ task_cmd({ FixedTriggerDuration = "60" }) })
    assert.same(1, #new.runners)
    new.runners[1]:produce(1)
    local messages = new.m:flush()
    assert.same(3, #messages)
    assert.same(1000, messages[3].task.profilingStartTime)
    new.m:flushed(true)
    -- the task still ends 60 s after its first start, not after the reload
    new.now = 61000
    new.m:tick()
    assert.same(1, new.runners[1].stops)
  end)
end)

describe("task_manager:add (a continuous-profiling trigger's task)", function()
  local function continuous_task(fields)
    return tables.merged({ id = "c1", process_ids = { "p1" }, update_time = 0, start_time = 1000, duration_ms = 30000,
      trigger = "CONTINUOUS_PROFILING", target = "ON_CPU", origin = "continuous" }, fields)
  end

  it("runs it beside OAP's task for the same process, without replacing it", function()
    local env = setup()
    env.now = 1000
    env.m:on_commands({ task_cmd({ TaskStartTime = "0" }) })
    env.m:add(continuous_task())
    assert.same(2, env.m:running())
    assert.same(0, env.runners[1].stops)
    env.now = 31000
    env.m:tick()
    assert.same(1, env.runners[2].stops)
  end)

  it("tells on_failed when it cannot start, or expires waiting for its process", function()
    local env = setup({ fail = true })
    env.now = 1000
    env.m:add(continuous_task())
    assert.same({ "c1", "no BPF here" }, env.failed)
    env = setup()
    env.now = 1000
    env.m:add(continuous_task({ id = "c2", process_ids = { "unknown" } }))
    env.now = 31000
    env.m:tick()
    assert.same({ "c2", "it expired before its processes were known" }, env.failed)
  end)
end)
