-- End-to-end specs for /healthz while a script is disabled: its first line
-- says which script, why and since when, moonrover_scripts_disabled counts
-- it, and a reload that loads the script again brings back "ok".
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- A script that holds more and more memory, past a budget of 16 MiB.
local GROWER = [[
local agent = require("moonrover.agent")
agent.set_memory_budget(16)
local kept = {}
agent.every(0.01, function()
  for i = 1, 1000 do kept[#kept + 1] = string.rep("x", 1000) .. #kept end
end)
]]

local FINE = [[
local agent = require("moonrover.agent")
agent.gauge("spec_fine_loaded", "1 once the script is loaded"):set(1)
]]

local function utc(t)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", t)
end

local function first_line(text)
  return (text or ""):match("^[^\n]*")
end

-- The first line of /healthz once it matches pattern (a Lua pattern), or nil
-- after the wait, with the whole text last seen.
local function await_health(agent, pattern)
  local text
  local line = agent_run.wait_for(function()
    text = agent:get("/healthz")
    return text and first_line(text):match(pattern) and first_line(text)
  end)
  return line, text
end

-- Reloads with the scripts now in the folder; true once /healthz says the reload went well.
local function reload(agent)
  agent:signal("HUP")
  return agent_run.wait_for(function() return (agent:get("/healthz") or ""):match("\nlast reload: ok\n") end)
end

describe("moonrover agent /healthz with a script disabled (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  it("says degraded while a script is stopped for its memory budget, ok again after a reload", function()
    write(env.scripts .. "/grower.lua", GROWER)
    write(env.scripts .. "/steady.lua", FINE)
    local before = utc(os.time())
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_fine_loaded") == 1 end), agent:log_text())
    local line, text = await_health(agent, "^degraded")
    local after = utc(os.time())
    assert.is_truthy(line, "no degraded /healthz:\n" .. tostring(text) .. "\n" .. agent:log_tail())
    local since = line:match("^degraded: script grower disabled %(ran past its memory budget of 16 MiB%) since "
      .. "(%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ)$")
    assert.is_truthy(since, line)
    assert.is_true(before <= since and since <= after, since .. " is not between " .. before .. " and " .. after)
    assert.matches("\nscripts: %d+ active, 1 disabled\n", text)
    assert.same(1, agent:metric("moonrover_scripts_disabled"))

    write(env.scripts .. "/grower.lua", (FINE:gsub("spec_fine_loaded", "spec_grower_mended")))
    assert.is_truthy(reload(agent), agent:log_tail())
    line, text = await_health(agent, "^ok$")
    assert.is_truthy(line, "not ok after the reload:\n" .. tostring(text))
    assert.same(0, agent:metric("moonrover_scripts_disabled"))
    assert.same(1, agent:metric("spec_grower_mended"))
  end)

  it("names the first script disabled while two are, and one that did not start counts", function()
    write(env.scripts .. "/broken.lua", "local x = = 1\n")
    write(env.scripts .. "/grower.lua", GROWER)
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_scripts_disabled") == 2 end),
      agent:log_tail())
    local line, text = await_health(agent, "^degraded")
    assert.is_truthy(line, tostring(text))
    assert.matches("^degraded: script broken disabled %([^\n]*/broken%.lua:1: unexpected symbol near '='%) since "
      .. "%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", line)
    assert.matches("\n  grower: disabled: ran past its memory budget of 16 MiB\n", text, 1, true)

    os.remove(env.scripts .. "/broken.lua")
    assert.is_truthy(reload(agent), agent:log_tail())
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_scripts_disabled") == 1 end),
      agent:get("/healthz"))
    line, text = await_health(agent, "^degraded: script grower ")
    assert.is_truthy(line, tostring(text))
  end)
end)
