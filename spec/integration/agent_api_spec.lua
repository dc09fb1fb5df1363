-- Specs for lua/moonrover/agent.lua (the script API) with a fake runtime:
-- the real FFI types, but every mr_script_* call recorded instead of run.
local real = require("moonrover.rt")
local ffi = real.ffi

local calls, metric_result, guarded

local fake_lib = setmetatable({
  mr_script_subscribe = function(_, stream) calls[#calls + 1] = { "subscribe", stream } return 0 end,
  mr_script_timer = function(_, id, s, rep) calls[#calls + 1] = { "timer", id, s, rep } return 0 end,
  mr_script_timer_cancel = function(_, id) calls[#calls + 1] = { "cancel", id } end,
  mr_script_set_budget = function(_, ms, err)
    calls[#calls + 1] = { "budget", ms }
    if ms >= 10 and ms <= 60000 then
      return 0
    end
    ffi.copy(err, "a budget is 10 to 60000 ms, not " .. ms)
    return -22
  end,
  mr_script_set_memory_budget = function(_, mib, err)
    calls[#calls + 1] = { "memory", mib }
    if mib >= 1 and mib <= 65536 then
      return 0
    end
    ffi.copy(err, "a memory budget is 1 to 65536 MiB, not " .. mib)
    return -22
  end,
  mr_script_log = function(_, level, msg) calls[#calls + 1] = { "log", level, ffi.string(msg) } end,
  mr_script_metric = function(_, kind, name, help, labels, err)
    calls[#calls + 1] = { "metric", kind, name, help, labels }
    if metric_result < 0 then
      ffi.copy(err, "invalid metric name \"" .. name .. "\"")
    end
    return metric_result
  end,
  mr_script_histogram = function(_, name, help, labels, bounds, n, err)
    local list = {}
    for i = 1, n do
      list[i] = bounds[i - 1]
    end
    calls[#calls + 1] = { "histogram", name, help, labels, list }
    if metric_result < 0 then
      ffi.copy(err, "histogram \"" .. name .. "\" has buckets {1}, not {2}")
    end
    return metric_result
  end,
  mr_script_metric_add = function(_, id, v) calls[#calls + 1] = { "add", id, v } end,
  mr_script_metric_set = function(_, id, v) calls[#calls + 1] = { "set", id, v } end,
  mr_script_metric_observe = function(_, id, v) calls[#calls + 1] = { "observe", id, v } end,
}, { __index = real.lib })

-- the agent module as a script's state loads it; config: { name, text } of --config
local function load_agent(imported, config)
  calls, metric_result, guarded = {}, 7, 0
  package.loaded["moonrover.agent"] = nil
  package.loaded["moonrover.rt"] = { ffi = ffi, lib = fake_lib, call = real.call, has_test_api = real.has_test_api,
    lock_free = function(name) return real.lock_free(name) and fake_lib[name] end,
    guard = function(clib)
      guarded = guarded + 1
      return real.guard(clib)
    end }
  package.loaded["moonrover.script_context"] = { script = 4096, name = "spec", canary = false,
    imported = imported, config_name = config and config.name, config_text = config and config.text }
  local agent = require("moonrover.agent")
  package.loaded["moonrover.rt"] = real
  return agent
end

local function batch_of(kinds)
  local events = ffi.new("struct mr_process_event[?]", #kinds)
  for i, kind in ipairs(kinds) do
    events[i - 1].kind = kind
    events[i - 1].pid = 100 + i
  end
  return events
end

describe("moonrover.agent", function()
  it("subscribes once per stream and hands every handler the whole batch", function()
    local agent = load_agent()
    local seen_a, seen_b = {}, 0
    agent.on("process", function(batch)
      for ev in batch:each() do seen_a[#seen_a + 1] = ev.pid end
    end)
    agent.on("process", function(batch) seen_b = seen_b + batch.n end)
    assert.same({ { "subscribe", real.lib.MR_STREAM_PROCESS } }, calls)
    local events = batch_of({ agent.EXEC, agent.EXIT, agent.FORK })
    agent._dispatch(real.lib.MR_STREAM_PROCESS, tonumber(ffi.cast("uintptr_t", events)), 3)
    assert.same({ 101, 102, 103 }, seen_a)
    assert.same(3, seen_b)
  end)

  it("gives typed events by index too", function()
    local agent = load_agent()
    local kinds = {}
    agent.on("process", function(batch)
      for i = 0, batch.n - 1 do kinds[#kinds + 1] = batch.events[i].kind end
      assert.same("process", batch.stream)
    end)
    local events = batch_of({ agent.EXIT, agent.EXEC })
    agent._dispatch(real.lib.MR_STREAM_PROCESS, tonumber(ffi.cast("uintptr_t", events)), 2)
    assert.same({ agent.EXIT, agent.EXEC }, kinds)
  end)

  it("rejects unknown streams and non-functions", function()
    local agent = load_agent()
    assert.has_error(function() agent.on("nope", function() end) end,
      "unknown stream 'nope' (streams: process, connection, http)")
    assert.has_error(function() agent.on("process", 5) end, "on(stream, fn): fn must be a function")
  end)

  it("runs repeating and one-shot timers, cancelling one-shots after they fire", function()
    local agent = load_agent()
    local ticks, once = 0, 0
    local every = agent.every(2.5, function() ticks = ticks + 1 end)
    agent.after(0.5, function() once = once + 1 end)
    assert.same({ "timer", 1, 2.5, 1 }, calls[1])
    assert.same({ "timer", 2, 0.5, 0 }, calls[2])
    agent._timer(1)
    agent._timer(1)
    agent._timer(2)
    agent._timer(2)
    assert.same(2, ticks)
    assert.same(1, once)
    assert.same({ "cancel", 2 }, calls[3])
    every.cancel()
    assert.same({ "cancel", 1 }, calls[4])
    agent._timer(1)
    assert.same(2, ticks)
  end)

  it("checks timer arguments", function()
    local agent = load_agent()
    assert.has_error(function() agent.every(0, function() end) end,
      "every(seconds, fn): seconds must be a number, at least 0.001, not 0")
    assert.has_error(function() agent.after(1, "x") end, "after(seconds, fn): fn must be a function, not string")
    assert.same({}, calls)
  end)

  -- The file and line of the script's call, whatever the API does inside
  -- (every() reaches its check through a tail call).
  local function raised_at(fn)
    local line = debug.getinfo(2, "l").currentline
    local ok, err = pcall(fn)
    assert.is_false(ok)
    local at = err:match("^(.-:%d+): ")
    assert.same("spec/integration/agent_api_spec.lua:" .. line, at and at:gsub("^.*/spec/", "spec/"), err)
    return err:gsub("^.-:%d+: ", "")
  end

  it("points its errors at the script's own line", function()
    local agent = load_agent()
    assert.same("every(seconds, fn): fn must be a function, not nil", raised_at(function() agent.every(1, nil) end))
    assert.same("after(seconds, fn): seconds must be a number, at least 0.001, not 0.0001",
      raised_at(function() agent.after(0.0001, function() end) end))
    assert.same("unknown stream 'nope' (streams: process, connection, http)",
      raised_at(function() agent.on("nope", print) end))
    assert.same("gauge:set(v): v must be a number, not nil", raised_at(function() agent.gauge("g"):set() end))
    metric_result = -22
    assert.same('invalid metric name "9bad"', raised_at(function() agent.counter("9bad") end))
  end)

  it("refuses to take a counter down", function()
    local agent = load_agent()
    local c = agent.counter("x_total")
    assert.same("counter:add(v): v must be a number >= 0 (counters only go up), not -1",
      raised_at(function() c:add(-1) end))
    assert.same("counter:add(v): v must be a number >= 0 (counters only go up), not nan",
      raised_at(function() c:add(0 / 0) end))
    c:add(0)
    assert.same({ { "metric", real.lib.MR_COUNTER, "x_total", "", "" }, { "add", 7, 0 } }, calls)
  end)

  it("sets the script's own memory budget within bounds", function()
    local agent = load_agent()
    agent.set_memory_budget(512)
    assert.same({ "memory", 512 }, calls[1])
    assert.same("set_memory_budget(mib): a memory budget is 1 to 65536 MiB, not 0",
      raised_at(function() agent.set_memory_budget(0) end))
  end)

  it("logs formatted lines at each level", function()
    local agent = load_agent()
    agent.log.info("%d processes", 3)
    agent.log.error("plain %s")
    agent.log.debug(42)
    assert.same({ "log", 1, "3 processes" }, calls[1])
    assert.same({ "log", 3, "plain %s" }, calls[2])
    assert.same({ "log", 0, "42" }, calls[3])
  end)

  it("logs bytes from the wire escaped: no terminal control, no line of their own", function()
    local agent = load_agent()
    agent.log.warn("slow: %s %s", "GET", "/\27]0;X\7\rfake line\255")
    assert.same({ "log", 2, "slow: GET /\\x1b]0;X\\x07\\x0dfake line\\xff" }, calls[1])
  end)

  it("registers metrics with sorted, escaped labels and updates them", function()
    local agent = load_agent()
    local c = agent.counter("x_total", "help", { z = "1", a = "q\"b\\" })
    c:inc()
    c:add(5)
    agent.gauge("g"):set(2)
    agent.histogram("h_seconds", nil, { k = "v" }):observe(0.5)
    assert.same({ "metric", real.lib.MR_COUNTER, "x_total", "help", 'a="q\\"b\\\\",z="1"' }, calls[1])
    assert.same({ "add", 7, 1 }, calls[2])
    assert.same({ "add", 7, 5 }, calls[3])
    assert.same({ "metric", real.lib.MR_GAUGE, "g", "", "" }, calls[4])
    assert.same({ "set", 7, 2 }, calls[5])
    assert.same({ "histogram", "h_seconds", "", 'k="v"', {} }, calls[6])
    assert.same({ "observe", 7, 0.5 }, calls[7])
  end)

  it("registers a histogram with its own buckets, as a list of numbers", function()
    local agent = load_agent()
    local buckets = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }
    local h = agent.histogram("req_seconds", "Requests", { code = "200" }, buckets)
    h:observe(0.2)
    agent.histogram("tiny_seconds", nil, nil, { 1e-6 })
    assert.same({
      { "histogram", "req_seconds", "Requests", 'code="200"', buckets },
      { "observe", 7, 0.2 },
      { "histogram", "tiny_seconds", "", "", { 1e-6 } },
    }, calls)
  end)

  it("raises bad buckets at the script's line, before the registry sees them", function()
    local agent = load_agent()
    local usage = "histogram(name, help, labels, buckets): "
    assert.same(usage .. "buckets must be a list of numbers, not string",
      raised_at(function() agent.histogram("h", nil, nil, "0.1,1") end))
    assert.same(usage .. "buckets must hold at least one bound",
      raised_at(function() agent.histogram("h", nil, nil, {}) end))
    assert.same(usage .. "bucket 2 must be a number, not string",
      raised_at(function() agent.histogram("h", nil, nil, { 0.1, "1" }) end))
    assert.same(usage .. "buckets must be a list of numbers, not a table with the key \"x\"",
      raised_at(function() agent.histogram("h", nil, nil, { 0.1, x = 1 }) end))
    assert.same(usage .. "buckets must be a list of numbers, not a table with the key 1.5",
      raised_at(function() agent.histogram("h", nil, nil, { 0.1, [1.5] = 2 }) end))
    assert.same(usage .. "buckets must be a list of numbers, not a table with the key true",
      raised_at(function() agent.histogram("h", nil, nil, { 0.1, [true] = 2 }) end))
    assert.same({}, calls)
    metric_result = -22
    assert.same('histogram "h" has buckets {1}, not {2}',
      raised_at(function() agent.histogram("h", nil, nil, { 2 }) end))
  end)

  it("raises the registry's reason for a bad metric", function()
    local agent = load_agent()
    metric_result = -22
    assert.has_error(function() agent.counter("9bad") end, 'invalid metric name "9bad"')
  end)

  it("sets the script's own budget within bounds", function()
    local agent = load_agent()
    agent.set_budget(5000)
    assert.same({ "budget", 5000 }, calls[1])
    assert.has_error(function() agent.set_budget(5) end, "set_budget(ms): a budget is 10 to 60000 ms, not 5")
  end)

  it("runs on_stop hooks in order when the agent stops", function()
    local agent = load_agent()
    local order = {}
    agent.on_stop(function() order[#order + 1] = "a" end)
    agent.on_stop(function() order[#order + 1] = "b" end)
    agent._stop()
    assert.same({ "a", "b" }, order)
    assert.has_error(function() agent.on_stop(1) end, "on_stop(fn): fn must be a function")
  end)

  it("gives the exported state back when the reload is refused", function()
    local agent = load_agent()
    local back
    agent.export(function() return { n = 3 } end, function(state) back = state end)
    agent._reclaim(agent._export())
    assert.same({ n = 3 }, back)
    assert.has_error(function() agent.export(function() end, 5) end,
      "export(fn, refused): fn (and refused, when given) must be functions")
  end)

  it("hands state to the next version through export and imported", function()
    local old = load_agent()
    assert.is_nil(old._export())
    old.export(function() return { seen = 12, names = { "a", "b" } } end)
    local text = old._export()
    local new = load_agent(text)
    assert.same({ seen = 12, names = { "a", "b" } }, new.imported())
    assert.is_nil(load_agent().imported())
  end)

  it("reads the --config text in the script's own state, through a guarded libyaml", function()
    package.loaded["moonrover.config"], package.loaded["moonrover.lib.yaml"] = nil, nil
    local agent = load_agent(nil, { name = "rover.yaml", text = "core:\n  backend:\n    addr: oap:1\n" })
    assert.same(1, guarded)
    assert.same("oap:1", agent.config().core.backend.addr)
    assert.equal(agent.config(), agent.config())
  end)

  it("raises the --config file's error, naming its line", function()
    local agent = load_agent(nil, { name = "rover.yaml", text = "core:\n  a: 1\n  a: 2\n" })
    assert.has_error(function() agent.config() end, 'rover.yaml:3: duplicate key "a" (first at line 2)')
  end)

  it("gives the defaults when there is no --config", function()
    assert.same(require("moonrover.config").defaults(), load_agent().config())
  end)
end)
