-- End-to-end specs for what the agent does with scripts that misbehave or
-- cannot be trusted: memory budgets (and freeing what a stopped script
-- held), time budgets at load, scripts that do not start, canary failures,
-- errors that point at the script's own line, --strict, and scripts others
-- could have written.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local MIB = 1024 * 1024

-- A script that leaves a mark (a file) when it runs, with root's powers.
local EVIL = [[
local ffi = require("ffi")
ffi.cdef("int system(const char *);")
ffi.C.system("touch %s")
]]

-- The agent's resident memory in bytes.
local function rss(pid)
  local status = e2e.read_all("/proc/" .. pid .. "/status") or ""
  local kb = tonumber(status:match("VmRSS:%s*(%d+) kB"))
  return kb and kb * 1024
end

local count = agent_run.count

-- Runs the agent in the foreground (it should refuse to start); gives up
-- after 30 s (it is then running, which is the failure). Returns its exit
-- code and standard error.
local function run_refused(scripts, extra)
  local code, _, err = e2e.run(string.format("timeout 30 %s agent --http 127.0.0.1:0 --pid-file off --scripts %s %s",
    e2e.quote(e2e.bin), e2e.quote(scripts), extra or ""))
  return code, err
end

describe("moonrover agent scripts (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  it("stops a script past its memory budget, frees its state and shows each script's memory", function()
    local budget_mib = 64
    write(env.scripts .. "/grower.lua", [[
local agent = require("moonrover.agent")
agent.set_memory_budget(]] .. budget_mib .. [[)
local kept = {}
agent.every(0.01, function()
  for i = 1, 1000 do kept[#kept + 1] = string.rep("x", 1000) .. #kept end
end)
]])
    write(env.scripts .. "/steady.lua", [[
local agent = require("moonrover.agent")
local seen = {}
agent.on("process", function(batch) seen[#seen + 1] = batch.n end)
]])
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    local peak = 0
    local stopped = agent_run.wait_for(function()
      peak = math.max(peak, rss(agent.pid) or 0)
      return agent:metric('moonrover_lua_memory_exceeded_total{script="grower"}') == 1
    end, 60)
    assert.is_truthy(stopped, agent:log_tail())
    -- the agent's own memory (about 30 MiB) and the budget, with room for
    -- malloc's rounding: without a budget the script grows without end
    assert.is_true(peak < (budget_mib + 64) * MIB, "peak RSS " .. peak)
    assert.same(1, count(agent:log_text(),
      "[grower] ran past its memory budget of 64 MiB: script disabled until the next successful reload"))
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_memory_bytes{script="grower"}') == 0
    end), agent:get("/metrics"))
    assert.same(budget_mib * MIB, agent:metric('moonrover_lua_memory_budget_bytes{script="grower"}'))
    assert.is_true(agent:metric('moonrover_lua_memory_bytes{script="steady"}') > 0)
    assert.same(1, agent:metric('moonrover_scripts{state="disabled"}'))
    local health = agent:get("/healthz")
    assert.matches("scripts: 2 active, 1 disabled", health)
    assert.matches("\n  grower: disabled: ran past its memory budget of 64 MiB\n", health, 1, true)
    assert.matches("\n  steady: active, memory %d+%.%d of 128 MiB\n", health)
    assert.is_true(agent:alive())
  end)

  it("frees the state of a script interrupted mid-call", function()
    write(env.scripts .. "/hog.lua", [[
local agent = require("moonrover.agent")
agent.set_memory_budget(1024)
local kept = {}
for i = 1, 150000 do kept[i] = string.rep("y", 1000) .. i end
agent.gauge("spec_hog_loaded", "1 once the hog holds its memory"):set(1)
agent.after(0.2, function() while true do end end)
]])
    local agent = env:start("--budget-ms 3000")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_hog_loaded") == 1 end),
      agent:log_text())
    local holding = rss(agent.pid)
    assert.is_true(holding > 120 * MIB, "RSS while holding " .. holding)
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_interrupts_total{script="hog"}') == 1
    end, 30), agent:log_text())
    local freed = agent_run.wait_for(function()
      local now = rss(agent.pid)
      return now < holding - 100 * MIB and now
    end)
    assert.is_truthy(freed, "RSS " .. tostring(rss(agent.pid)) .. " after the interrupt, " .. holding .. " before")
    assert.same(0, agent:metric('moonrover_lua_memory_bytes{script="hog"}'))
  end)

  it("lets set_budget at load extend the load", function()
    write(env.scripts .. "/slow_start.lua", [[
local agent = require("moonrover.agent")
agent.set_budget(5000)
local t0 = agent.now()
while agent.now() < t0 + 0.4 do end
agent.gauge("spec_slow_start", "1 once the slow load finished"):set(1)
]])
    local agent = env:start("--budget-ms 100")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_slow_start") == 1 end),
      agent:log_text())
    assert.not_matches("not started", agent:log_text())
  end)

  it("counts a script interrupted at load as disabled, naming the budget it ran under", function()
    write(env.scripts .. "/stuck.lua", [[
local agent = require("moonrover.agent")
agent.set_budget(300)
while true do end
]])
    local agent = env:start("--budget-ms 100")
    assert.is_truthy(agent.port, agent:log_text())
    assert.matches("script not started: " .. env.scripts:gsub("%p", "%%%0")
      .. "/stuck%.lua: ran past its time budget of 300 ms", agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return agent:metric('moonrover_scripts{state="disabled"}') == 1 end),
      agent:get("/metrics"))
    local health = agent:get("/healthz")
    assert.matches("scripts: 1 active, 1 disabled", health)
    assert.matches("\n  stuck: disabled: " .. env.scripts .. "/stuck.lua: ran past its time budget of 300 ms\n",
      health, 1, true)
    assert.same(1, agent:metric('moonrover_lua_interrupts_total{script="stuck"}'))
  end)

  it("counts a canary's failure apart from the running version's errors, logs it once, marks its output", function()
    -- The canary gets copies of recent events (or one made up): every
    -- version logs each batch it gets; the second also fails on it.
    local script = [[
local agent = require("moonrover.agent")
print("version %d loading")
agent.on("process", function(batch)
  agent.log.info("version %d got a batch")
  %s
end)
]]
    write(env.scripts .. "/watcher.lua", script:format(1, 1, ""))
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    os.execute("true")
    assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match("version 1 got a batch") end),
      agent:log_text())
    write(env.scripts .. "/watcher.lua", script:format(2, 2, 'error("version 2 breaks")'))
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_canary_failures_total{script="watcher"}') == 1
    end), agent:log_text())
    local log = agent:log_text()
    assert.is_nil(agent:metric('moonrover_lua_errors_total{script="watcher"}'))
    assert.same(1, count(log, "version 2 breaks"))
    assert.matches("reload refused, the previous scripts keep running: its canary batch failed: [^\n]*watcher%.lua:5: "
      .. "version 2 breaks", log)
    assert.matches("%[watcher%] %(canary%) version 2 loading", log)
    assert.matches("%[watcher%] %(canary%) version 2 got a batch", log)
    assert.not_matches("%] version 2", log)
  end)

  it("points script errors at the script's line, without the agent API's frames", function()
    write(env.scripts .. "/bad_timer.lua", "local agent = require('moonrover.agent')\nagent.every(1, nil)\n")
    write(env.scripts .. "/bad_stream.lua", "local agent = require('moonrover.agent')\nagent.on('nope', print)\n")
    write(env.scripts .. "/raiser.lua", [[
local agent = require("moonrover.agent")
agent.after(0.1, function()
  agent.gauge("spec_raiser"):set("not a number")
end)
]])
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_lua_errors_total{script="raiser"}') == 1
    end), agent:log_text())
    local log = agent:log_text()
    assert.matches("script not started: [^\n]*/bad_timer%.lua:2: "
      .. "every%(seconds, fn%): fn must be a function, not nil\n", log)
    assert.matches("script not started: [^\n]*/bad_stream%.lua:2: "
      .. "unknown stream 'nope' %(streams: process, connection, http%)\n", log)
    assert.matches("%[raiser%] [^\n]*/raiser%.lua:3: gauge:set%(v%): v must be a number, not string\n", log)
    assert.not_matches("moonrover/agent%.lua", log)
    assert.not_matches("moonrover/rt%.lua", log)
  end)

  it("points bad histogram buckets at the script's line", function()
    write(env.scripts .. "/descending.lua", [[
local agent = require("moonrover.agent")
agent.histogram("spec_descending_seconds", nil, nil, { 1, 0.5 })
]])
    write(env.scripts .. "/textual.lua", [[
local agent = require("moonrover.agent")
agent.histogram("spec_textual_seconds", nil, nil, { 0.1, "1" })
]])
    write(env.scripts .. "/fine.lua", [[
local agent = require("moonrover.agent")
agent.histogram("spec_fine_seconds", nil, nil, { 0.5 }):observe(1)
]])
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_fine_seconds_count") == 1 end),
      agent:log_text())
    local log = agent:log_text()
    assert.matches("script not started: [^\n]*/descending%.lua:2: "
      .. 'histogram "spec_descending_seconds": bucket bounds must be strictly ascending, not 1 then 0%.5\n', log)
    assert.matches("script not started: [^\n]*/textual%.lua:2: "
      .. "histogram%(name, help, labels, buckets%): bucket 2 must be a number, not string\n", log)
    assert.same(2, agent:metric('moonrover_scripts{state="disabled"}'))
    assert.is_nil(agent:metric("spec_descending_seconds_count"))
    assert.matches('\nspec_fine_seconds_bucket{le="0%.5"} 0\nspec_fine_seconds_bucket{le="%+Inf"} 1\n',
      agent:get("/metrics"))
  end)

  it("refuses to start with a broken script under --strict, naming it, before running any", function()
    local marker = env.dir .. "/good-ran"
    -- named to come first: it would run before the broken one is read
    write(env.scripts .. "/a_good.lua", EVIL:format(marker))
    write(env.scripts .. "/broken.lua", "local x = = 1\n")
    local code, err = run_refused(env.scripts, "--strict")
    assert.same(1, code, err)
    assert.matches("moonrover agent: %-%-strict: not starting with a broken script: [^\n]*/broken%.lua:1: ", err)
    assert.is_nil(e2e.read_all(marker), "the good script ran")
    assert.not_matches("started %d+ of", err)
  end)

  it("says on /healthz how the first start went, before any reload", function()
    write(env.scripts .. "/fine.lua", "local agent = require('moonrover.agent')\n")
    write(env.scripts .. "/broken.lua", "local x = = 1\n")
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    local health = agent:get("/healthz")
    assert.matches("\nstart: 1 script failed: " .. env.scripts .. "/broken.lua:1: unexpected symbol near '='\n",
      health, 1, true)
    assert.not_matches("last reload", health)
    os.remove(env.scripts .. "/broken.lua")
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return (agent:get("/healthz") or ""):match("last reload: ok\n") end),
      agent:log_text())
  end)

  it("says that --scripts names a file, not a directory", function()
    write(env.scripts .. "/fine.lua", "local agent = require('moonrover.agent')\n")
    local code, err = run_refused(env.scripts .. "/fine.lua")
    assert.same(1, code, err)
    assert.same("moonrover agent: --scripts: " .. env.scripts .. "/fine.lua is a file, not a directory; name the "
      .. "directory that holds your scripts (--scripts " .. env.scripts .. ")\n", err)
  end)

  it("counts a stack overflow in a stream callback as an error, and the script keeps running", function()
    -- Not a tail call: each level keeps its frame until the Lua stack is full.
    local deep = [[
local agent = require("moonrover.agent")
local function down(n) return down(n + 1) + 1 end
agent.on("process", function(batch) down(1) end)
]]
    write(env.scripts .. "/deep.lua", deep)
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function()
      os.execute("true")
      return (agent:metric('moonrover_lua_errors_total{script="deep"}') or 0) >= 2
    end), agent:log_text())
    local log = agent:log_text()
    assert.matches("%[deep%] [^\n]*/deep%.lua:2: stack overflow\nstack traceback:\n", log)
    assert.not_matches("ran past its time budget", log)
    assert.is_nil(agent:metric('moonrover_lua_interrupts_total{script="deep"}'))
    assert.matches("\n  deep: active", agent:get("/healthz"), 1, true)
    -- in a reload's canary, the same: an error, not a budget overrun
    write(env.scripts .. "/deep.lua", deep .. "-- version 2\n")
    local code, _, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(3, code, err)
    assert.matches("refused the reload, its previous scripts keep running: its canary batch failed: [^\n]*"
      .. "/deep%.lua:2: stack overflow", err)
    assert.not_matches("time budget", err)
  end)

  it("refuses a scripts directory others can write, and runs it only when told to", function()
    local marker = env.dir .. "/evil-ran"
    os.execute("chown 65534:65534 " .. e2e.quote(env.scripts) .. " && chmod 777 " .. e2e.quote(env.scripts))
    local evil = env.scripts .. "/evil.lua"
    write(evil, EVIL:format(marker))
    os.execute("chown 65534:65534 " .. e2e.quote(evil) .. " && chmod 666 " .. e2e.quote(evil))
    local code, err = run_refused(env.scripts)
    assert.same(1, code, err)
    assert.same("moonrover agent: refusing to run scripts from " .. env.scripts
      .. ": it is owned by uid 65534, not by root or the agent's user"
      .. " (fix with chown, or allow it with --allow-unsafe-scripts)\n", err:match("[^\n]*\n$"))
    assert.is_nil(e2e.read_all(marker))
    local agent = env:start("--allow-unsafe-scripts")
    assert.is_truthy(agent_run.wait_for(function() return e2e.read_all(marker) end), agent:log_text())
  end)

  it("skips a script file others can write in a safe directory", function()
    local marker = env.dir .. "/evil-ran"
    local evil = env.scripts .. "/evil.lua"
    write(evil, EVIL:format(marker))
    os.execute("chmod 666 " .. e2e.quote(evil))
    write(env.scripts .. "/fine.lua", [[
local agent = require("moonrover.agent")
agent.gauge("spec_fine", "1 once loaded"):set(1)
]])
    local agent = env:start()
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_fine") == 1 end), agent:log_text())
    assert.matches("script not started: refusing to run " .. evil:gsub("%p", "%%%0")
      .. ": it is writable by group or others %(mode 0666; fix with chmod go%-w", agent:log_text())
    assert.is_nil(e2e.read_all(marker))
  end)
end)
