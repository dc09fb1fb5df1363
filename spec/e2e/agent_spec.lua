-- End-to-end specs for `moonrover agent`: real BPF process events, real
-- processes, user scripts, hot reload, isolation of failing scripts, and a
-- clean stop. The agent runs in the background; specs read its /metrics.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- A script that counts exec and exit events of one program name, keeps the
-- counts across reloads (export/imported) and publishes them as gauges.
local COUNTER = [[
local agent = require("moonrover.agent")
local state = agent.imported() or { exec = 0, exit = 0, version = 0 }
state.version = state.version + 1
local exec_g = agent.gauge("spec_exec", "execs seen")
local exit_g = agent.gauge("spec_exit", "exits seen")
local version_g = agent.gauge("spec_version", "script versions loaded")
agent.on("process", function(batch)
  for ev in batch:each() do
    if require("ffi").string(ev.comm) == "%s" then
      if ev.kind == agent.EXEC then state.exec = state.exec + 1 end
      if ev.kind == agent.EXIT then state.exit = state.exit + 1 end
    end
  end
  exec_g:set(state.exec)
  exit_g:set(state.exit)
end)
version_g:set(state.version)
agent.export(function() return state end)
]]

-- Copies /bin/true under a name of the case's own so its events are its
-- alone; returns the copy's path and name.
local function make_program(dir)
  local name = e2e.own_name(dir, "mrt")
  local path = dir .. "/" .. name
  os.execute("cp /bin/true " .. e2e.quote(path))
  return path, name
end

local function run_many(program, n)
  os.execute(string.format("for i in $(seq %d); do %s; done", n, e2e.quote(program)))
end

describe("moonrover agent (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  it("counts every exec and exit exactly once, across a hot reload in the middle", function()
    local program, name = make_program(env.dir)
    write(env.scripts .. "/counter.lua", COUNTER:format(name))
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    run_many(program, 150)
    agent:signal("HUP")
    run_many(program, 150)
    local done = agent_run.wait_for(function()
      return agent:metric("spec_exit") == 300 and agent:metric("spec_exec") == 300
    end)
    assert.is_truthy(done, "exec=" .. tostring(agent:metric("spec_exec")) .. " exit=" ..
      tostring(agent:metric("spec_exit")) .. "\n" .. agent:log_text())
    assert.same(2, agent:metric("spec_version"))
    assert.same(1, agent:metric("moonrover_reload_last_success"))
    assert.same(0, agent:metric('moonrover_events_dropped_total{stream="process",reason="queue_full"}'))
  end)

  it("keeps the old version running when a reload has a syntax error or fails its canary", function()
    local program, name = make_program(env.dir)
    write(env.scripts .. "/counter.lua", COUNTER:format(name))
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))

    write(env.scripts .. "/counter.lua", "local x = = 1\n")
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_reload_last_success") == 0 end))
    assert.matches("reload refused, the previous scripts keep running: .*counter%.lua:1:", agent:log_text())
    assert.matches("last reload: failed: .*counter%.lua:1:", agent:get("/healthz"))

    write(env.scripts .. "/counter.lua", [[
local agent = require("moonrover.agent")
agent.on("process", function(batch) error("broken on its first batch") end)
]])
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function()
      return agent:log_text():match("reload refused.*broken on its first batch")
    end))

    run_many(program, 20)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_exit") == 20 end),
      "the old version should still count\n" .. agent:log_text())
    assert.same(1, agent:metric("spec_version"))
  end)

  it("survives a script that raises errors and one that loops forever", function()
    local program, name = make_program(env.dir)
    write(env.scripts .. "/counter.lua", COUNTER:format(name))
    write(env.scripts .. "/raiser.lua", [[
local agent = require("moonrover.agent")
agent.on("process", function(batch) error("raiser fails on purpose") end)
]])
    write(env.scripts .. "/looper.lua", [[
local agent = require("moonrover.agent")
agent.on("process", function(batch) local x = 0 while true do x = x + 1 end end)
]])
    local agent = env:start("--budget-ms 300")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    run_many(program, 30)
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_scripts{state="disabled"}') == 1
    end), agent:log_text())
    assert.same(1, agent:metric('moonrover_lua_interrupts_total{script="looper"}'))
    run_many(program, 30)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_exit") == 60 end),
      "the healthy script should keep counting\n" .. agent:log_text())
    assert.is_true(agent:metric('moonrover_lua_errors_total{script="raiser"}') >= 1)
    assert.matches("raiser fails on purpose", agent:log_text())
    assert.matches("stack traceback", agent:log_text())
    assert.matches("ran past its time budget of 300 ms", agent:log_text())
    assert.is_true(agent:alive())
    -- events that arrived while the looping script held the main thread were queued, none lost
    assert.is_truthy(agent_run.wait_for(function()
      local received = agent:metric('moonrover_events_received_total{stream="process"}')
      local delivered = agent:metric('moonrover_events_delivered_total{stream="process"}')
      local dropped = agent:metric('moonrover_events_dropped_total{stream="process",reason="queue_full"}')
      return received and received > 0 and received == delivered + dropped and dropped == 0
    end))
  end)

  it("runs a user script in place of the bundled one of the same name", function()
    write(env.scripts .. "/process_events.lua", [[
local agent = require("moonrover.agent")
agent.gauge("spec_replaced", "set by the user's process_events.lua"):set(1)
]])
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_replaced") == 1 end), agent:log_text())
    assert.not_matches("moonrover_process_events_total", agent:get("/metrics"))
    assert.matches("started 1 of 1 script%(s%)", agent:log_text())
  end)

  it("gives scripts the --config file through agent.config()", function()
    local cfg = env.dir .. "/rover.yaml"
    write(cfg, "core:\n  backend:\n    addr: ${MR_SPEC_UNSET_VAR:oap.example:11800}\n")
    write(env.scripts .. "/reads_config.lua", [[
local agent = require("moonrover.agent")
local config = require("moonrover.config")
local addr = config.get_string(agent.config(), "core.backend.addr")
agent.gauge("spec_config_ok", "1 when the script saw the configured address")
  :set(addr == "oap.example:11800" and 1 or 0)
]])
    local agent = env:start("--config " .. e2e.quote(cfg))
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_config_ok") == 1 end), agent:log_text())
  end)

  it("interrupts a script stuck in a runtime call only when the call returns", function()
    local program, name = make_program(env.dir)
    write(env.scripts .. "/counter.lua", COUNTER:format(name))
    write(env.scripts .. "/sleeper.lua", [[
local agent = require("moonrover.agent")
local rt = require("moonrover.rt").with_test_api()
agent.on("process", function(batch) rt.lib.mr_sys_sleep_ms(800) end)
]])
    -- A call blocked in the runtime takes no CPU: it is ended when its
    -- elapsed time passes ten budgets (500 ms here, the sleep is 800).
    local agent = env:start("--budget-ms 50")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    run_many(program, 5)
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_interrupts_total{script="sleeper"}') == 1
    end), agent:log_text())
    run_many(program, 5)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_exit") == 10 end), agent:log_text())
    assert.is_true(agent:alive())
  end)

  it("interrupts a script looping on print and survives one that breaks package", function()
    local program, name = make_program(env.dir)
    write(env.scripts .. "/counter.lua", COUNTER:format(name))
    write(env.scripts .. "/printer.lua", [[
local agent = require("moonrover.agent")
agent.after(0.05, function() while true do print("spam") end end)
]])
    write(env.scripts .. "/breaker.lua", "package = nil\n")
    local agent = env:start("--budget-ms 50")
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_interrupts_total{script="printer"}') == 1
    end), agent:log_text():sub(-2000))
    assert.matches("breaker%.lua: its package table is unusable", agent:log_text())
    run_many(program, 5)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_exit") == 5 end))
  end)

  it("closes what an interrupted script opened through the runtime", function()
    write(env.scripts .. "/holder.lua", [[
local agent = require("moonrover.agent")
local profiler = require("moonrover.profiler.profiler")
local p = assert(profiler.open({ frequency = 99, kernel = true }))
assert(p:start())
agent.gauge("spec_holder_started", "1 once the profiler runs"):set(1)
agent.after(1, function() while true do end end)
]])
    -- The budget bounds the script's load too, profiler and all: that took
    -- 60 to 110 ms beside a busy loop per core and other test suites, under
    -- a tenth of this budget. The loop runs from 1 s after the load until
    -- the budget interrupts it, well after the fds are counted.
    local budget_s = 2
    local agent = env:start("--budget-ms " .. budget_s * 1000)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_holder_started") == 1 end),
      agent:log_text())
    local function fds()
      local p = io.popen("ls /proc/" .. agent.pid .. "/fd | wc -l")
      local n = tonumber(p:read("*l"))
      p:close()
      return n
    end
    local holding = fds()
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_interrupts_total{script="holder"}') == 1
    end, 1 + budget_s + 10), agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return fds() < holding end),
      "the abandoned script's perf events and BPF objects should be closed")
  end)

  it("gives exported state back to the running version when a reload is refused late", function()
    write(env.scripts .. "/a_holder.lua", [[
local agent = require("moonrover.agent")
local reclaimed = agent.gauge("spec_reclaimed", "state given back after a refused reload")
agent.export(function() return { n = 7 } end, function(state) reclaimed:set(state.n) end)
]])
    write(env.scripts .. "/z_later.lua", "local agent = require('moonrover.agent')\n")
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    -- passes its canary, fails when loaded for real: after a_holder exported
    write(env.scripts .. "/z_later.lua", [[
local agent = require("moonrover.agent")
agent.counter("spec_late_total", "made by a version refused late"):inc()
if not agent.canary then error("only the live load fails") end
]])
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_reclaimed") == 7 end),
      agent:log_text())
    assert.matches("reload refused.*only the live load fails", agent:log_text())
    assert.is_nil((agent:get("/metrics") or ""):find("spec_late_total", 1, true), agent:get("/metrics"))
  end)

  it("exports a histogram with Prometheus' default buckets, and refuses a reload that changes them", function()
    local script = [[
local agent = require("moonrover.agent")
local h = agent.histogram("spec_http_seconds", "Spec requests", { code = "200" }, { %s })
agent.gauge("spec_histogram_version"):set(%d)
h:observe(0.3)
]]
    local prometheus = "0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10"
    local function section()
      return (env.agent:get("/metrics") or ""):match("# HELP spec_http_seconds .-spec_http_seconds_count[^\n]*\n")
    end
    local function expected(count)
      local lines = { "# HELP spec_http_seconds Spec requests", "# TYPE spec_http_seconds histogram" }
      for le in (prometheus .. ", +Inf"):gmatch("[^, ]+") do
        local n = (le == "+Inf" or tonumber(le) >= 0.3) and count or 0
        lines[#lines + 1] = string.format('spec_http_seconds_bucket{code="200",le="%s"} %d', le, n)
      end
      lines[#lines + 1] = string.format('spec_http_seconds_sum{code="200"} %s', count == 1 and "0.3" or "0.6")
      lines[#lines + 1] = string.format('spec_http_seconds_count{code="200"} %d', count)
      return table.concat(lines, "\n") .. "\n"
    end

    write(env.scripts .. "/latency.lua", script:format(prometheus, 1))
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_histogram_version") == 1 end),
      agent:log_text())
    assert.same(expected(1), section())

    write(env.scripts .. "/latency.lua", script:format("0.1, 1", 2))
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_reload_last_success") == 0 end),
      agent:log_text())
    assert.matches("reload refused, the previous scripts keep running: [^\n]*latency%.lua:2: histogram "
      .. '"spec_http_seconds" has buckets {0%.005,0%.01,0%.025,0%.05,0%.1,0%.25,0%.5,1,2%.5,5,10}, not {0%.1,1}\n',
      agent:log_text())
    assert.same(expected(1), section())

    write(env.scripts .. "/latency.lua", script:format(prometheus, 3))
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_histogram_version") == 3 end),
      agent:log_text())
    assert.same(expected(2), section())
  end)

  it("stops cleanly on SIGTERM: exit status 0, pid file and status file removed", function()
    write(env.scripts .. "/counter.lua", COUNTER:format("mrspec_true"))
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return e2e.read_all(env.dir .. "/agent.pid.status") end))
    assert.same(0, agent:stop())
    assert.is_nil(e2e.read_all(env.dir .. "/agent.pid"))
    assert.is_nil(e2e.read_all(env.dir .. "/agent.pid.status"))
    assert.matches("stopped", e2e.read_all(env.dir .. "/agent.log"))
  end)

  it("reloads through `moonrover reload`, which waits for the agent's answer", function()
    write(env.scripts .. "/counter.lua", COUNTER:format("mrspec_true"))
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(0, code, err)
    assert.same("the agent (pid " .. agent.pid .. ") reloaded its scripts: loaded 2 script(s)\n", out)
    -- answered after the swap: the new version is there already
    assert.same(2, agent:metric("spec_version"))
    local missing_code, _, missing_err = e2e.moonrover({ "reload", "--pid-file", env.dir .. "/missing.pid" })
    assert.same(1, missing_code)
    assert.matches("^moonrover reload: cannot read .*missing%.pid", missing_err)
  end)

  it("exits 3 with the agent's reason when it refuses the reload", function()
    write(env.scripts .. "/counter.lua", COUNTER:format("mrspec_true"))
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    write(env.scripts .. "/counter.lua", "local x = = 1\n")
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(3, code, out .. err)
    assert.same("", out)
    assert.same("moonrover reload: the agent (pid " .. agent.pid .. ") refused the reload, its previous scripts "
      .. "keep running: " .. env.scripts .. "/counter.lua:1: unexpected symbol near '='\n", err)
    assert.same(0, agent:metric("moonrover_reload_last_success"))
  end)

  it("only signals with `moonrover reload --no-wait`", function()
    write(env.scripts .. "/counter.lua", COUNTER:format("mrspec_true"))
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_version") == 1 end))
    write(env.scripts .. "/counter.lua", "local x = = 1\n")
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--no-wait" })
    assert.same(0, code, err)
    assert.same("asked the agent (pid " .. agent.pid .. ") to reload its scripts\n", out)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_reload_last_success") == 0 end),
      agent:log_text())
  end)
end)
