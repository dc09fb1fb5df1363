-- End-to-end specs of the network tracer inside `moonrover agent`: the
-- bundled network script's coroot series on /metrics count exactly what real
-- servers and clients did, both sides. nginx serves in one systemd-like
-- service, curl asks from another (spec/support/servers.lua), so each side
-- has a container_id of its own and the machine's other traffic counts
-- under other ids.
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
local WAIT_S = 20 -- a close is acted on within a second; progress events come every 5 s

local NGINX_LOCATIONS = [[
    location = /ok { return 200 "ok\n"; }
    location = /fail { return 500; }
    location / { return 404; }
]]

-- Starts curl in the service asking for each path, on one connection, then
-- keeps it running (it reads a FIFO) until release(), which returns what it
-- wrote: "STATUS EXIT CONNECTS" per request (CONNECTS: connections it
-- opened for that request). The tracer learns a process's container
-- from /proc/PID/cgroup when it meets the process's first event, after the
-- agent's next drain: a client that has exited by then is not measured.
local function held_curl(service, dir, port, paths)
  local n = #(e2e.read_all(dir .. "/curls") or "")
  local base = dir .. "/curl" .. n
  write(dir .. "/curls", string.rep(".", n + 1))
  assert(os.execute("mkfifo " .. e2e.quote(base .. ".hold")) == 0)
  local words = { "curl -s --max-time 30" }
  local each = "-o /dev/null -w '%{http_code} %{exitcode} %{num_connects}\\n' http://127.0.0.1:" .. port
  for _, path in ipairs(paths) do
    words[#words + 1] = each .. path
  end
  words[#words + 1] = "-o /dev/null file://" .. base .. ".hold"
  local pid = service:start(table.concat(words, " "), base .. ".out")
  return {
    release = function()
      os.execute("timeout 10 sh -c " .. e2e.quote("echo >" .. base .. ".hold"))
      agent_run.wait_for(function() return not service:pids()[pid] end)
      return ((e2e.read_all(base .. ".out") or ""):gsub("[^\n]*\n$", ""))
    end,
  }
end

local function labels(t)
  local keys, parts = {}, {}
  for k in pairs(t) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for i, k in ipairs(keys) do
    parts[i] = string.format('%s="%s"', k, t[k])
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- What was seen of the series asked for, and what may explain a miss.
local function report(agent, names)
  local body = agent:get("/metrics") or ""
  local lines = {}
  for line in body:gmatch("[^\n]+") do
    for _, name in ipairs(names) do
      if line:find(name, 1, true) then
        lines[#lines + 1] = line
      end
    end
    if line:find("^moonrover_events_dropped_total") or line:find("^moonrover_net_records_lost_total") or
        line:find("^moonrover_scripts") then
      lines[#lines + 1] = line
    end
  end
  return table.concat(lines, "\n") .. "\n" .. agent:log_tail(20)
end

describe("the network tracer in moonrover agent: coroot's series (end to end)", function()
  local env = traced_services.each_test(before_each, after_each)
  local nginx

  it("counts nginx's requests and curl's, on keep-alive and fresh connections, exactly", function()
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    nginx = servers.nginx(env.server, env.dir, NGINX_LOCATIONS)
    local dst = "127.0.0.1:" .. nginx.port
    local listen = "container_net_tcp_listen_info" .. labels({ container_id = env.server.id, listen_addr = dst,
      proxy = "" })
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(listen) == 1 end, WAIT_S),
      report(agent, { env.server.id }))

    -- One connection with 6 requests (the 500 last: nginx closes the
    -- connection after it), then two connections with one each.
    local curls = {
      held_curl(env.client, env.dir, nginx.port, { "/ok", "/missing", "/ok", "/missing", "/ok", "/fail" }),
      held_curl(env.client, env.dir, nginx.port, { "/ok" }),
      held_curl(env.client, env.dir, nginx.port, { "/missing" }),
    }
    local sent = { ["2xx"] = 4, ["4xx"] = 3, ["5xx"] = 1 }
    local inbound, outbound = {}, {}
    for status in pairs(sent) do
      inbound[status] = "container_http_inbound_requests_total" .. labels({ container_id = env.server.id,
        status = status })
      outbound[status] = "container_http_requests_total" .. labels({ container_id = env.client.id, destination = dst,
        actual_destination = dst, status = status })
    end
    local conn_labels = labels({ container_id = env.client.id, destination = dst, actual_destination = dst })
    local active = "container_net_tcp_active_connections" .. conn_labels
    local counted = agent_run.wait_for(function()
      for status, n in pairs(sent) do
        if agent:metric(inbound[status]) ~= n or agent:metric(outbound[status]) ~= n then
          return false
        end
      end
      return true
    end, WAIT_S)
    local answers = { curls[1].release(), curls[2].release(), curls[3].release() }
    assert.same({ "200 0 1\n404 0 0\n200 0 0\n404 0 0\n200 0 0\n500 0 0\n", "200 0 1\n", "404 0 1\n" }, answers)
    assert.is_truthy(counted, report(agent, { env.server.id, env.client.id }))
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(active) == 0 end, WAIT_S),
      report(agent, { env.client.id }))

    assert.equal(3, agent:metric("container_net_tcp_successful_connects_total" .. conn_labels))
    assert.is_true(agent:metric("container_net_tcp_bytes_sent_total" .. conn_labels) > 0)
    assert.is_true(agent:metric("container_net_tcp_bytes_received_total" .. conn_labels) > 0)
    assert.equal(8, agent:metric("container_http_requests_duration_seconds_total_count" .. conn_labels))
    assert.equal(8, agent:metric("container_http_inbound_requests_duration_seconds_total_count" ..
      labels({ container_id = env.server.id })))
    assert.equal(0, agent:metric("moonrover_net_metrics_series_dropped_total"))
    -- the agent's own counts (the machine's other traffic is traced too:
    -- at least what this case sent), published once a second
    assert.is_truthy(agent_run.wait_for(function()
      return (agent:metric('moonrover_net_exchanges_total{script="network"}') or 0) >= 16
    end, WAIT_S), report(agent, { "moonrover_net_" }))
    assert.is_truthy(agent_run.wait_for(function()
      return (agent:metric("moonrover_net_records_total") or 0) >= 32
    end, WAIT_S), report(agent, { "moonrover_net_" }))
    assert.is_not_nil(agent:metric('moonrover_net_connections{script="network"}'))

    env.server:stop(nginx.pid)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(listen) == 0 end, WAIT_S),
      report(agent, { env.server.id }))
  end)

  it("counts a connect to a closed port as one failed connect", function()
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    local port = servers.free_port()
    local curl = held_curl(env.client, env.dir, port, { "/" })
    local failed = "container_net_tcp_failed_connects_total" .. labels({ container_id = env.client.id,
      destination = "127.0.0.1:" .. port })
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(failed) == 1 end, WAIT_S),
      report(agent, { env.client.id }))
    assert.same("000 7 0\n", curl.release()) -- 7: could not connect
    assert.is_nil(agent:metric("container_net_tcp_successful_connects_total" .. labels({ container_id = env.client.id,
      destination = "127.0.0.1:" .. port, actual_destination = "127.0.0.1:" .. port })))
  end)
end)
