-- End-to-end specs for the agent's HTTP endpoint under a slowloris flood
-- (spec/support/slowloris.py) with few file descriptors: the connection cap
-- holds, the slowest connections are closed, /healthz still answers, the log
-- stays short, and SIGHUP is still handled.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local slowloris = require("support.slowloris")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local SLOWLORIS = slowloris.SCRIPT
local FD_LIMIT = 128   -- the agent's open-files limit: it uses about 30 at rest
local CLIENTS = 300    -- slow connections kept open, more than the limit
local CAP = 64         -- the default connection cap
local LOG_BYTES = 8192 -- far more than its few lines; a flood of accept errors is megabytes

describe("the agent's HTTP endpoint under a slowloris flood (end to end)", function()
  local client
  local env = agent_run.each_test(before_each, after_each, {
    tear_down = function()
      e2e.kill(client)
      client = nil
    end,
  })

  it("keeps its cap, answers /healthz, logs little and handles SIGHUP", function()
    local agent = env:start()
    assert.is_truthy(agent.port, agent:log_text())
    assert.same(0, (e2e.run("prlimit --pid " .. agent.pid .. " --nofile=" .. FD_LIMIT .. ":" .. FD_LIMIT)))
    local st_file = env.dir .. "/slowloris.status"
    local p = io.popen(string.format("/usr/bin/python3 %s 127.0.0.1 %d %d --reopen --interval 0.5 --status %s " ..
      "--duration 120 >/dev/null 2>&1 & echo $!", e2e.quote(SLOWLORIS), agent.port, CLIENTS, e2e.quote(st_file)))
    client = tonumber(p:read("*l"))
    p:close()
    assert.is_truthy(agent_run.wait_for(function() return (slowloris.status(st_file).opened or 0) >= CLIENTS end),
      "the flood should be under way: " .. (e2e.read_all(st_file) or "no status"))
    assert.is_truthy(agent_run.wait_for(function() return slowloris.status(st_file).closed >= CLIENTS - CAP end),
      "connections beyond the cap should be closed: " .. e2e.read_all(st_file) .. #agent:log_text() ..
      " bytes of log")

    for _ = 1, 5 do
      local health = agent:get("/healthz")
      assert.is_truthy(health and health:match("^ok\n"), "no answer from /healthz\n" .. agent:log_tail())
    end
    assert.is_true(agent:metric("moonrover_http_connections") <= CAP)
    assert.is_true(agent:metric('moonrover_http_connections_closed_total{reason="evicted"}') >= CLIENTS - CAP)

    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match("SIGHUP: reloading") end),
      "SIGHUP should be handled during the flood\n" .. agent:log_tail())
    assert.is_true(agent:alive())
    local log = agent:log_text()
    assert.is_true(#log < LOG_BYTES, #log .. " bytes of log:\n" .. agent:log_tail(10))
    assert.is_nil(log:find("Error from accept", 1, true))
  end)
end)
