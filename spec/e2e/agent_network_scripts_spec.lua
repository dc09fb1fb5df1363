-- End-to-end specs of user scripts on the network tracer's "http" stream in
-- `moonrover agent`: the two examples of docs/lua-api.md (5xx answers
-- counted by path, slow requests logged) against a python server and client,
-- each in a systemd-like service; what a script asking for the stream
-- gets when the agent runs with --network off; and the series of a new
-- network script whose reload is refused, which go with its canary.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local servers = require("support.servers")
local traced_services = require("support.traced_services")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The machine is shared: a flood of requests from another spec makes the
-- tracer's garbage outrun its collector for a while, and the default
-- memory budget would stop the scripts under test.
local AGENT_OPTIONS = "--network on --script-memory 1024"
local WAIT_S = 20

-- The examples, as docs/lua-api.md gives them.
local SERVER_ERRORS = [[
-- Counts the 5xx answers of this host's HTTP servers, by path.
local agent = require("moonrover.agent")

local counters = {}

agent.on("http", function(batch)
  for ex in batch:each() do
    if ex.role == "server" and ex.status >= 500 then
      local path = ex.target and ex.target:match("^[^?]*") or "unknown"
      local c = counters[path]
      if not c then
        c = agent.counter("http_server_errors_total", "5xx answers of this host's HTTP servers, by path",
          { path = path })
        counters[path] = c
      end
      c:inc()
    end
  end
end)
]]

local SLOW_REQUESTS = [[
-- Logs each HTTP exchange that took longer than a second, from the
-- request's first byte to the response's last.
local agent = require("moonrover.agent")

agent.on("http", function(batch)
  for ex in batch:each() do
    if ex.duration_ns and ex.duration_ns > 1e9 then
      agent.log.warn("slow: %s %s -> %d in %.1f s (%s, pid %d, remote %s)", tostring(ex.method),
        tostring(ex.target), ex.status, ex.duration_ns / 1e9, ex.role, ex.pid, tostring(ex.remote))
    end
  end
end)
]]

local count = agent_run.count

describe("user scripts on the network tracer's http stream (end to end)", function()
  local env = traced_services.each_test(before_each, after_each)

  it("runs the examples of docs/lua-api.md: 5xx answers counted by path, slow requests logged", function()
    write(env.scripts .. "/server_errors.lua", SERVER_ERRORS)
    write(env.scripts .. "/slow_requests.lua", SLOW_REQUESTS)
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    -- Paths of this case alone: other specs' traffic goes through the scripts too.
    local u = env.dir:match("[^.]+$")
    local slow, unavailable, fine = "/slow-" .. u, "/unavailable-" .. u, "/fine-" .. u
    local http = servers.http_server(env.server, env.dir, { slow .. "=200:1.2", unavailable .. "=503", fine .. "=200" })

    local progress = env.dir .. "/progress"
    local code, _, err = env.client:run(table.concat({ servers.PYTHON, e2e.quote(servers.SUPPORT .. "/http_client.py"),
      http.port, e2e.quote(progress), fine, unavailable, slow, unavailable, fine, unavailable }, " "))
    assert.equal(0, code, err)
    assert.equal(3, count(e2e.read_all(progress), " 503\n"))

    local errors = 'http_server_errors_total{path="' .. unavailable .. '"}'
    local marker = " " .. slow .. " -> 200 in "
    local seen = agent_run.wait_for(function()
      local log = agent:log_text()
      return agent:metric(errors) == 3 and count(log, marker) == 2
    end, WAIT_S)
    assert.is_truthy(seen, "errors: " .. tostring(agent:metric(errors)) .. "\n" .. agent:log_tail())
    local log = agent:log_text()
    local line = "%[slow_requests%] slow: GET " .. slow:gsub("%p", "%%%0") .. " %-> 200 in [%d.]+ s %((%a+), pid %d+"
    local roles = {}
    for role in log:gmatch(line) do
      roles[#roles + 1] = role
    end
    table.sort(roles)
    assert.same({ "client", "server" }, roles)
    assert.equal(0, count(log, " " .. unavailable .. " -> "))
    assert.equal(0, count(log, " " .. fine .. " -> "))
    assert.is_nil(agent:metric('http_server_errors_total{path="' .. slow .. '"}'))
    assert.is_nil(agent:metric('http_server_errors_total{path="' .. fine .. '"}'))
    assert.equal(0, agent:metric('moonrover_scripts{state="disabled"}'))
  end)

  it("leaves none of a refused new script's series on /metrics", function()
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    -- its canary makes the tracer's series, then fails
    write(env.scripts .. "/refused.lua", [[
local agent = require("moonrover.agent")
agent.on("http", function() end)
agent.counter("spec_refused_total", "never kept"):inc()
error("refused on purpose")
]])
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(3, code, out .. err)
    assert.matches("refused on purpose", err)
    local metrics = agent:get("/metrics")
    assert.matches('moonrover_net_exchanges_total{script="network"}', metrics, 1, true)
    assert.is_nil(metrics:match('\nmoonrover_net_[%w_]+{script="refused"}'), metrics)
    assert.is_nil(metrics:match('\nmoonrover_lua_memory[%w_]*{script="refused"}'), metrics)
    assert.is_nil(metrics:find("spec_refused_total", 1, true), metrics)
    assert.same(1, agent:metric('moonrover_lua_canary_failures_total{script="refused"}'))
    -- the same series, made again by a version that is kept, count as before
    write(env.scripts .. "/refused.lua", "local agent = require('moonrover.agent')\nagent.on('http', function() end)\n")
    code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(0, code, out .. err)
    assert.is_truthy(agent_run.wait_for(function()
      return agent:metric('moonrover_net_connections{script="refused"}') ~= nil
    end), agent:get("/metrics"))
  end)

  it("with --network off, runs no network script and refuses the http stream in one line", function()
    write(env.scripts .. "/server_errors.lua", SERVER_ERRORS)
    write(env.scripts .. "/ticker.lua", [[
local agent = require("moonrover.agent")
local ticks = agent.counter("spec_ticks_total", "")
agent.every(0.05, function() ticks:inc() end)
]])
    local agent = env:start("--network off")
    assert.is_truthy(agent.port, agent:log_text())
    local reason = "the network tracer is not running (agent --network off, or the kernel cannot: the agent's log " ..
      "says why)"
    local line = "script not started: " .. env.scripts .. "/server_errors.lua:6: " .. reason .. "\n"
    assert.is_truthy(agent_run.wait_for(function() return (agent:metric("spec_ticks_total") or 0) > 0 end),
      agent:log_text())
    assert.equal(1, count(agent:log_text(), line), agent:log_text())
    assert.equal(1, count(agent:log_text(), reason), agent:log_text())

    local health = agent:get("/healthz")
    assert.matches("scripts: 2 active, 1 disabled", health, 1, true)
    assert.matches("\n  server_errors: disabled: " .. env.scripts .. "/server_errors.lua:6: " .. reason .. "\n",
      health, 1, true)
    assert.is_nil(health:find("\n  network:", 1, true), health)
    local metrics = agent:get("/metrics")
    assert.is_nil(metrics:find('script="network"', 1, true))
    assert.is_nil(metrics:find("moonrover_net_", 1, true))
    assert.is_true(agent:alive())
    local before = agent:metric("spec_ticks_total")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_ticks_total") > before end))
  end)
end)
