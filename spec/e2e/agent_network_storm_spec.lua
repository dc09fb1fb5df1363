-- agent_network_storm_spec.lua - the bundled network.lua under a storm of
-- connections, end to end: a local nginx takes thousands of short
-- connections a second (wrk, "Connection: close") while 20,000 idle
-- keep-alive ones are held (spec/support/idle_clients.py; fewer where the
-- open-files limit cannot be raised that far), against a real
-- `moonrover agent` with its default script memory. The script stays
-- enabled, its Lua memory per tracked connection stays small, and after the
-- load the tracer's connections, and the kernel's map of them, go back to
-- about what they were.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local servers = require("support.servers")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local IDLE = 20000
local HOLD_S = 22
local WRK_S = 10
local PER_CONN_MAX = 300
-- The tracer and the kernel side follow every connection of the host, and
-- the machine is shared (another engineer's 16,000 idle connections, open
-- before the agent started, are found by both as they move): after the
-- load the tracer follows no more connections than before or than the
-- kernel's map holds, and the map no more than before or than the host's
-- TCP sockets open, give or take SLACK (other processes' connections come
-- and go meanwhile).
local SLACK = 200
-- Closes are acted on within a second; under the storm the kernel loses
-- close events (tens of thousands of wrk's connections were left without
-- one), and those are found by the tracer's walk once idle 30 s, 2,560
-- lookups a second.
local SETTLE_S = 45
-- An idle connection drops its parser's state after 4 x 500 ms; the probe
-- measures every second.
local REST_S = 4
-- Other processes' connections count too, and a busy one has its parser's
-- state: the memory per connection is taken again every second for
-- PROBE_S, until it fits.
local PROBE_S = 6

local NGINX_CONF = [[
worker_processes 1;
worker_rlimit_nofile 65536;
pid HOME/nginx.pid;
error_log HOME/error.log;
events { worker_connections 30000; }
http {
  access_log off;
  keepalive_timeout 300s;
  keepalive_requests 100000;
  client_body_temp_path HOME/tmp;
  proxy_temp_path HOME/tmp;
  fastcgi_temp_path HOME/tmp;
  uwsgi_temp_path HOME/tmp;
  scgi_temp_path HOME/tmp;
  server {
    listen 127.0.0.1:%d backlog=4096;
    location / { return 200 "ok\n"; }
  }
}
]]

local function start_nginx(dir)
  local home = dir .. "/nginx"
  assert(os.execute("mkdir -p " .. e2e.quote(home .. "/tmp")) == 0)
  local port = servers.free_port()
  write(home .. "/nginx.conf", (NGINX_CONF:format(port):gsub("HOME", function() return home end)))
  os.execute(string.format("sh -c %s >/dev/null 2>&1 &", e2e.quote(string.format(
    "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec %s -e %s -p %s -c %s -g 'daemon off;'",
    servers.NGINX, home .. "/error.log", home .. "/", home .. "/nginx.conf"))))
  local pid = agent_run.wait_for(function()
    local code = e2e.run("curl -s -o /dev/null --max-time 2 http://127.0.0.1:" .. port .. "/")
    return code == 0 and tonumber(e2e.read_all(home .. "/nginx.pid") or "")
  end)
  assert(pid, "nginx did not start: " .. (e2e.read_all(home .. "/error.log") or ""))
  return { pid = pid, port = port }
end

-- A probe script beside the bundled ones: its own tracer (scripts share no
-- Lua state) with handlers that keep nothing, and its live Lua memory after
-- a full collection as a gauge, so that the tracer's memory per connection
-- is measured without the bundled script's series nor garbage.
local PROBE = [[
local agent = require("moonrover.agent")
require("moonrover.net.exchange").reuse()
agent.set_budget(10000)
agent.on("connection", function() end)
agent.on("http", function() end)
local live = agent.gauge("storm_probe_live_bytes", "The probe's Lua memory after a full collection")
agent.every(1, function()
  collectgarbage("collect")
  live:set(collectgarbage("count") * 1024)
end)
]]

local function series(agent, name, script)
  return agent:metric(name .. '{script="' .. (script or "network") .. '"}')
end

-- The probe's live memory (its series may carry labels of the agent's).
local function probe_live(agent)
  return tonumber(((agent:get("/metrics") or ""):match("\nstorm_probe_live_bytes[^ \n]* ([%d%.e%+]+)")))
end

-- The connections the kernel side follows.
local function kernel_connections(agent)
  return agent:metric("moonrover_net_kernel_connections")
end

-- The host's TCP sockets open now: neither listening nor closed (TIME-WAIT).
local function open_sockets()
  local _, out = e2e.run("ss -Htan")
  local n = 0
  for state in out:gmatch("(%S+)[^\n]*") do
    n = n + ((state == "LISTEN" or state == "TIME-WAIT") and 0 or 1)
  end
  return n
end

-- Starts the idle clients: IDLE connections held for seconds; their pid and
-- how many it holds once they are open.
local function start_idle(dir, port, seconds)
  local ready = dir .. "/idle.ready"
  local _, started = e2e.run(string.format("sh -c %s >%s 2>&1 & echo $!", e2e.quote(string.format(
    "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec %s %s %d %d %s %d", servers.PYTHON,
    e2e.quote(servers.SUPPORT .. "/idle_clients.py"), port, IDLE, e2e.quote(ready), seconds)),
    e2e.quote(dir .. "/idle.out")))
  local pid = tonumber(started:match("%d+"))
  return pid, agent_run.wait_for(function() return tonumber(e2e.read_all(ready) or "") end, 30)
end

-- Waits until the tracer of script follows both ends of the idle ones.
local function wait_both_ends(agent, script, idle)
  local n = agent_run.wait_for(function()
    local n = series(agent, "moonrover_net_connections", script)
    return n and n >= 2 * idle and n
  end, 10)
  assert.is_truthy(n, string.format("%s connections for %d idle ones\n%s",
    tostring(series(agent, "moonrover_net_connections", script)), idle, agent:log_tail()))
  return n
end

describe("the bundled network script under a storm of connections (end to end)", function()
  local dir, agent, nginx, idle_pid

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    if agent then
      agent:stop()
    end
    for _, pid in ipairs({ idle_pid or 0, nginx and nginx.pid or 0 }) do
      if pid > 0 then
        os.execute("kill " .. pid .. " 2>/dev/null")
      end
    end
    e2e.rmdir(dir)
  end)

  it("stays enabled, its series moving, and forgets the connections after the load, as the kernel does", function()
    agent = agent_run.start(dir, agent_run.scripts_dir(dir), "--network on")
    assert.is_truthy(agent.port, agent:log_text())
    nginx = start_nginx(dir)
    local before = agent_run.wait_for(function() return series(agent, "moonrover_net_connections") end, 10)
    assert.is_truthy(before, agent:log_tail())
    local kernel_before, sockets_before = kernel_connections(agent), open_sockets()
    assert.is_truthy(kernel_before, agent:log_tail())
    local idle
    idle_pid, idle = start_idle(dir, nginx.port, HOLD_S)
    assert.is_truthy(idle, e2e.read_all(dir .. "/idle.out"))
    wait_both_ends(agent, "network", idle)

    local exchanges = series(agent, "moonrover_net_exchanges_total")
    local code, wrk_out = e2e.run(string.format("wrk -t1 -c200 -d%ds -H 'Connection: close' http://127.0.0.1:%d/",
      WRK_S, nginx.port))
    assert.equal(0, code, wrk_out)
    local requests = tonumber(wrk_out:match("(%d+) requests in"))
    assert.is_truthy(requests and requests > 1000, wrk_out)
    local health = agent:get("/healthz") or ""
    assert.equal("ok", health:match("^[^\n]*"), health)
    assert.is_truthy(agent_run.wait_for(function()
      return series(agent, "moonrover_net_exchanges_total") >= exchanges + requests / 2
    end, 10), string.format("%s exchanges, %d before, %d requests\n%s",
      tostring(series(agent, "moonrover_net_exchanges_total")), exchanges, requests, agent:log_tail()))

    -- the idle clients close; the short connections are long gone
    assert.is_truthy(agent_run.wait_for(function() return not servers.alive(idle_pid) end, HOLD_S + 10))
    local left = agent_run.wait_for(function()
      local n, kernel, sockets = series(agent, "moonrover_net_connections"), kernel_connections(agent), open_sockets()
      return n and kernel and n <= math.max(before, kernel) + SLACK
        and kernel <= math.max(kernel_before, sockets) + SLACK
    end, SETTLE_S)
    assert.is_truthy(left, string.format("%s connections left in the tracer (%d before), %s in the kernel's map (%d "
      .. "before), %d sockets open (%d before)\n%s", tostring(series(agent, "moonrover_net_connections")), before,
      tostring(kernel_connections(agent)), kernel_before, open_sockets(), sockets_before, agent:log_tail()))
    health = agent:get("/healthz") or ""
    assert.equal("ok", health:match("^[^\n]*"), health)
    assert.equal(0, agent_run.count(agent:log_text(), "script disabled"), agent:log_tail())
  end)

  it("holds at most 300 bytes of Lua per idle connection in its tracer", function()
    local scripts = agent_run.scripts_dir(dir)
    write(scripts .. "/storm_probe.lua", PROBE)
    agent = agent_run.start(dir, scripts, "--network on")
    assert.is_truthy(agent.port, agent:log_text())
    nginx = start_nginx(dir)
    local before = agent_run.wait_for(function()
      local n = series(agent, "moonrover_net_connections", "storm_probe")
      return n and probe_live(agent) and n
    end, 10)
    assert.is_truthy(before, agent:log_tail())
    local live_before = probe_live(agent)
    local idle
    idle_pid, idle = start_idle(dir, nginx.port, 2 * REST_S + 10)
    assert.is_truthy(idle, e2e.read_all(dir .. "/idle.out"))
    wait_both_ends(agent, "storm_probe", idle)
    os.execute("sleep " .. REST_S)
    local live, n, per_conn
    local fits = agent_run.wait_for(function()
      live, n = probe_live(agent), series(agent, "moonrover_net_connections", "storm_probe")
      per_conn = (live - live_before) / (n - before)
      return per_conn <= PER_CONN_MAX
    end, PROBE_S)
    assert.is_truthy(fits, string.format("%.0f bytes per connection (%d connections, %d of them the spec's; %d bytes)",
      per_conn, n, 2 * idle, live))
  end)
end)
