-- End-to-end specs of user scripts watching processes in `moonrover agent`:
-- every example of docs/lua-api.md's "Processes" and "Windows and silence"
-- sections runs as a user script without an error (and the one keeping its
-- window and silence across a reload keeps them), and a policy built on
-- moonrover.processes, moonrover.windows and moonrover.silence finds a busy
-- loop and acts on it once.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local lua_api_doc = require("support.lua_api_doc")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local WAIT_S = 30

-- The Lua blocks of the two sections that are whole scripts, in order.
local function doc_examples()
  local out = {}
  for _, heading in ipairs({ "## Processes: `moonrover.processes`", "## Windows and silence:" }) do
    for _, block in ipairs(lua_api_doc.examples(heading)) do
      if block:find('require("moonrover.agent")', 1, true) then
        out[#out + 1] = block
      end
    end
  end
  return out
end

-- Starts a busy loop; returns its pid.
local function busy_loop()
  local p = assert(io.popen("exec sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"))
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

local count = agent_run.count

describe("moonrover agent watching processes (end to end)", function()
  local busy
  local env = agent_run.each_test(before_each, after_each, {
    set_up = function() busy = busy_loop() end,
    tear_down = function() e2e.kill(busy) end,
  })

  it("runs every example of the Processes and Windows sections of docs/lua-api.md", function()
    local examples = doc_examples()
    assert.equal(8, #examples, "examples found in docs/lua-api.md")
    for i, text in ipairs(examples) do
      write(string.format("%s/example_%d.lua", env.scripts, i), text)
    end
    local agent = env:start()
    -- The 10-second examples have logged what they always log.
    local logged = agent_run.wait_for(function()
      local log = agent:log_text()
      return log:find("[example_2] uid 0 runs", 1, true) and log:find("execs per second over 60 s", 1, true)
        and log:find("on %d+ CPUs")
    end, WAIT_S)
    assert.truthy(logged, agent:log_tail())
    assert.is_number(agent:metric("example_load_per_cpu"), "the load gauge is not on /metrics")
    -- A reload hands the last example's window and silence to its new version.
    agent:signal("HUP")
    local kept = agent_run.wait_for(function()
      return tonumber(agent:log_text():match("%[example_8%] watching the load per CPU, ([1-9]%d*) seconds of it kept"))
    end, WAIT_S)
    assert.truthy(kept, "the reloaded example kept no history:\n" .. agent:log_tail())
    local health = agent:get("/healthz") or ""
    assert.truthy(health:find("last reload: ok", 1, true), health)
    for i = 1, #examples do
      local name = "example_" .. i
      assert.truthy(health:find("  " .. name .. ": active", 1, true), name .. " is not active:\n" .. health)
      assert.equal(0, agent:metric('moonrover_lua_errors_total{script="' .. name .. '"}') or 0,
        name .. " raised errors:\n" .. agent:log_tail())
    end
  end)

  it("lets a user script watch a busy process with a window and act on it once", function()
    write(env.scripts .. "/watch_busy.lua", string.format([[
local agent = require("moonrover.agent")
local processes = require("moonrover.processes")
local windows = require("moonrover.windows")
local silence = require("moonrover.silence")

local PID = %d
local sampler = processes.sampler()
local w = windows.new(5)
local quiet = silence.new(600, agent.now)
local samples = agent.counter("spec_watch_samples_total", "Samples of the busy loop")

for _, p in ipairs(assert(processes.list())) do
  if p.pid == PID then
    agent.log.info("listed %%d: %%s %%s", p.pid, p.comm, p.exe)
  end
end

agent.every(1, function()
  local s = sampler:sample({ PID })[PID]
  if s and s.cpu then
    samples:inc()
    w:add(agent.now(), s.cpu)
    if w:at_least(2, 5, 0.2, agent.now()) and quiet:try(PID) then
      agent.log.info("busy %%d (%%s): %%.2f of a core", PID, s.comm, w:mean(5, agent.now()))
    end
  end
end)
]], busy))
    local agent = env:start()
    local fired = agent_run.wait_for(function() return agent:log_text():find("busy " .. busy .. " (sh)", 1, true) end,
      WAIT_S)
    assert.truthy(fired, agent:log_tail())
    local before = agent:metric("spec_watch_samples_total") or 0
    local sampled = agent_run.wait_for(function()
      return (agent:metric("spec_watch_samples_total") or 0) >= before + 3
    end, WAIT_S)
    assert.truthy(sampled, "the script stopped sampling:\n" .. agent:log_tail())
    local log = agent:log_text()
    assert.equal(1, count(log, "busy " .. busy .. " (sh)"), log)
    assert.truthy(log:find("listed " .. busy .. ": sh /", 1, true), log)
  end)
end)
