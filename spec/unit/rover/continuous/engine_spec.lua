-- Specs for the continuous-profiling engine with a clock, processes and
-- samples made up by the spec: Rover's rules (Count of Period seconds at or
-- above the threshold, triggers per dimension, silence, NETWORK's main
-- process) and each of Rover's defects it must not repeat.
local checkers = require("moonrover.rover.continuous.checkers")
local engine = require("moonrover.rover.continuous.engine")
local http_series = require("moonrover.net.http_series")
local policy = require("moonrover.rover.continuous.policy")
local silence = require("moonrover.silence")
local windows = require("moonrover.windows")
local tables = require("support.tables")

local function compile(pattern)
  return { match = function(_, s) return s:find(pattern) and { s } or nil end }
end

-- The policies of one service from a Lua Profiling table (target -> type -> item).
local function policies(profiling, source)
  local problems = {}
  local list = policy.read_profiling("shop", profiling, checkers.new(), compile, problems)
  assert.same({}, problems)
  for _, p in ipairs(list) do
    p.source = source
  end
  return list
end

local function proc(fields)
  return tables.merged({ key = "42:1000", pid = 42, id = "p42", service = "shop", instance = "i1", name = "python3",
    layer = "GENERAL", labels = {} }, fields)
end

-- An engine whose silence runs on the spec's clock.
local function new_engine(silence_seconds)
  local clock = { now = 0 }
  local e = engine.new({ windows = windows, silence = silence.new(silence_seconds or 60, function()
    return clock.now end) })
  return e, clock
end

-- Feeds one CPU share per second from `from` on, then checks at the last second.
local function cpu_run(e, clock, from, shares, pid)
  local t
  for i, share in ipairs(shares) do
    t = from + i - 1
    clock.now = t
    e:sample(t, { [pid or 42] = { cpu = share, threads = 4 } }, { load1 = 0.5 })
  end
  return e:check(t)
end

local CPU_50_5_3 = { ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 5, Count = 3 } } }

describe("continuous engine", function()
  it("fires ON_CPU when 3 of the last 5 seconds are at or above 50 %, with the cause and the meter", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies(CPU_50_5_3))
    e:set_processes({ proc() })
    local meters, triggers = cpu_run(e, clock, 100, { 0.9, 0.1, 0.5, 0.2, 0.7 })
    assert.same(1, #triggers)
    local t = triggers[1]
    assert.same({ "ON_CPU", "ON_CPU|p42", "shop", "i1" }, { t.target, t.dimension, t.service, t.instance })
    assert.same(1, #t.causes)
    assert.same({ 50, 70 }, { t.causes[1].threshold, t.causes[1].current })
    assert.same("ProcessCPU", t.causes[1].checker.cause)
    assert.same({ { service = "shop", instance = "i1", name = "process_cpu", value = 70,
      labels = { process_name = "python3", layer = "GENERAL" } } }, meters)
  end)

  it("does not fire on 2 of 5, and takes no value from a first sample (cpu nil) or a vanished process", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies(CPU_50_5_3))
    e:set_processes({ proc() })
    local _, triggers = cpu_run(e, clock, 100, { 0.9, 0.9, 0.1 })
    assert.same({}, triggers)
    e:sample(103, { [42] = { threads = 4 } }, {})
    e:sample(104, {}, {})
    local meters
    meters, triggers = e:check(104)
    assert.same({}, triggers)
    assert.same({}, meters)
  end)

  it("judges each item on its own period, not on a window sized for another item", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies({ ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 3, Count = 3 } },
      OFF_CPU = { PROCESS_CPU = { Threshold = "50", Period = 10, Count = 3 } } }))
    e:set_processes({ proc() })
    local _, triggers = cpu_run(e, clock, 100, { 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1 })
    assert.same(1, #triggers)
    assert.same("OFF_CPU", triggers[1].target)
  end)

  it("keeps the newest seconds when a policy's period shrinks", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies({ ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 10, Count = 6 } } }))
    e:set_processes({ proc() })
    local _, triggers = cpu_run(e, clock, 100, { 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9 })
    assert.same({}, triggers)
    e:set_policies("shop", policies({ ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 3, Count = 3 } } }))
    _, triggers = e:check(107)
    assert.same(1, #triggers)
  end)

  it("silences a dimension after a trigger, until the silence ends or the task is known not to have started",
    function()
      local e, clock = new_engine(60)
      e:set_policies("shop", policies(CPU_50_5_3))
      e:set_processes({ proc() })
      local _, triggers = cpu_run(e, clock, 100, { 0.9, 0.9, 0.9 })
      assert.same(1, #triggers)
      _, triggers = cpu_run(e, clock, 103, { 0.9, 0.9, 0.9 })
      assert.same({}, triggers)
      e:clear("ON_CPU|p42")
      _, triggers = cpu_run(e, clock, 106, { 0.9, 0.9, 0.9 })
      assert.same(1, #triggers)
      _, triggers = cpu_run(e, clock, 160, { 0.9, 0.9, 0.9 })
      assert.same({}, triggers)
      _, triggers = cpu_run(e, clock, 170, { 0.9, 0.9, 0.9 })
      assert.same(1, #triggers)
      e:clear("ON_CPU|p42", 20)
      _, triggers = cpu_run(e, clock, 180, { 0.9, 0.9, 0.9 })
      assert.same({}, triggers)
      _, triggers = cpu_run(e, clock, 193, { 0.9, 0.9, 0.9 })
      assert.same(1, #triggers)
    end)

  it("starts a restarted process (same pid, new start time) with empty windows", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies(CPU_50_5_3))
    e:set_processes({ proc() })
    cpu_run(e, clock, 100, { 0.9, 0.9 })
    e:set_processes({ proc({ key = "42:2000", id = "p42b" }) })
    local _, triggers = cpu_run(e, clock, 102, { 0.9 })
    assert.same({}, triggers)
    _, triggers = cpu_run(e, clock, 103, { 0.9, 0.9 })
    assert.same("ON_CPU|p42b", triggers[1].dimension)
  end)

  it("stops watching processes and services that are gone", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies(CPU_50_5_3))
    e:set_processes({ proc() })
    assert.is_false(e:idle())
    e:set_policies("shop", nil)
    assert.is_true(e:idle())
    local meters, triggers = cpu_run(e, clock, 100, { 0.9, 0.9, 0.9 })
    assert.same({}, meters)
    assert.same({}, triggers)
  end)

  it("watches the system load for every process of the service", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies({ OFF_CPU = { SYSTEM_LOAD = { Threshold = "2", Period = 2, Count = 2 } } }))
    e:set_processes({ proc(), proc({ key = "43:1", pid = 43, id = "p43" }) })
    for t = 100, 101 do
      clock.now = t
      e:sample(t, {}, { load1 = 2.5 })
    end
    local meters, triggers = e:check(101)
    assert.same({ "OFF_CPU|p42", "OFF_CPU|p43" }, { triggers[1].dimension, triggers[2].dimension })
    assert.same("system_load", meters[1].name)
  end)

  it("fires NETWORK on HTTP error rates by path, regex and globally, reported for the main process", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies({ NETWORK = {
      HTTP_ERROR_RATE = { Threshold = "50", Period = 3, Count = 2, URIList = { "/pay", "/cart" } },
      HTTP_AVG_RESPONSE_TIME = { Threshold = "100", Period = 3, Count = 2, URIRegex = "^/api" },
    } }))
    local app = proc({ labels = { "k8s-service" }, key = "43:1", pid = 43, id = "p43" })
    e:set_processes({ proc(), app })
    local series = http_series.new()
    for second = 100, 102 do
      for _, ex in ipairs({
        { pid = 42, target = "/pay", status = 500, duration_ns = 1e6 },
        { pid = 42, target = "/cart", status = 200, duration_ns = 1e6 },
        { pid = 43, target = "/api/users", status = 200, duration_ns = 300e6 },
      }) do
        ex.role, ex.response_end_ns = "server", second * 1e9 + 5e8
        series:add(ex)
      end
    end
    clock.now = 104
    e:sample(104, {}, {}, series)
    local meters, triggers = e:check(104)
    assert.same(1, #triggers)
    local t = triggers[1]
    assert.same({ "NETWORK", "NETWORK|shop_i1" }, { t.target, t.dimension })
    assert.same(app, t.main)
    assert.same(2, #t.processes)
    assert.same(1, #t.causes)
    assert.same({ "^/api", 100, 300 }, { t.causes[1].regex, t.causes[1].threshold, t.causes[1].current })
    assert.same(2, #t.all_causes)
    local by_uri = {}
    for _, m in ipairs(meters) do
      by_uri[m.labels.uri] = m.value
    end
    assert.same({ ["/pay"] = 100, ["/cart"] = 0, ["^/api"] = 300 }, by_uri)
  end)

  it("reads an HTTP second only once it is HTTP_LAG seconds old, and each second once", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies({ NETWORK = { HTTP_ERROR_RATE = { Threshold = "10", Period = 5, Count = 1 } } }))
    e:set_processes({ proc() })
    local series = http_series.new()
    series:add({ pid = 42, role = "server", status = 502, target = "/", response_end_ns = 100.2e9, duration_ns = 1 })
    clock.now = 101
    e:sample(101, {}, {}, series)
    local _, triggers = e:check(101)
    assert.same({}, triggers)
    e:sample(102, {}, {}, series)
    _, triggers = e:check(102)
    assert.same("", triggers[1].causes[1].regex)
  end)
  it("hands its windows to the next version (a hot reload), which finds them once the process is known", function()
    local e, clock = new_engine()
    e:set_policies("shop", policies(CPU_50_5_3))
    e:set_processes({ proc() })
    cpu_run(e, clock, 100, { 0.9, 0.9 })
    local data = e:export()
    local e2 = new_engine()
    e2:import(data)
    e2:set_policies("shop", policies({ ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 4, Count = 3 } } }))
    assert.is_false(e2:idle())
    e2:set_processes({})
    e2:set_processes({ proc() })
    local _, triggers = cpu_run(e2, clock, 102, { 0.9 })
    assert.same(1, #triggers)
  end)
end)
