-- End-to-end spec for net/coroot_metrics.lua inside `moonrover agent`: a
-- script gives it the agent's metrics API as its registry and feeds it
-- connection events and an exchange; /metrics shows coroot's series, and a
-- hot reload hands the connections over so that a close after it adds only
-- the bytes not counted yet.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The first version connects and sends 100 bytes; the next one (started by a
-- reload, with the state handed over) sees the close with 160 bytes in all.
local SCRIPT = [[
local agent = require("moonrover.agent")
local coroot_metrics = require("moonrover.net.coroot_metrics")
local state = agent.imported()
local metrics = assert(coroot_metrics.new(agent, { state = state }))
agent.export(function() return metrics:export() end)
agent.gauge("spec_version", ""):set(state and 2 or 1)

local function event(kind, extra)
  local e = { kind = kind, ts = 1e9, pid = 7, container_id = "/system.slice/spec.service", role = "client",
    local_addr = "10.20.0.1:41000", remote_addr = "10.20.0.2:8080" }
  for k, v in pairs(extra) do
    e[k] = v
  end
  return e
end

agent.after(0.01, function()
  if state then
    metrics:on_conn_event(event("close", { bytes_sent = 160, bytes_received = 40 }))
    return
  end
  metrics:on_conn_event(event("connect", { connect_ns = 2000000 }))
  metrics:on_conn_event(event("progress", { bytes_sent = 100, bytes_received = 10 }))
  metrics:on_exchange({ protocol = "http", status = 503, role = "client", remote = "10.20.0.2:8080",
    container_id = "/system.slice/spec.service", request_start_ns = 1e9, response_start_ns = 1e9 + 40e6 })
end)
]]

local DL = 'actual_destination="10.20.0.2:8080",container_id="/system.slice/spec.service",destination="10.20.0.2:8080"'

describe("coroot metrics in moonrover agent (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  it("exports coroot's series through the agent and counts bytes once across a reload", function()
    write(env.scripts .. "/net.lua", SCRIPT)
    local agent = env:start()
    local function sent()
      return agent:metric("container_net_tcp_bytes_sent_total{" .. DL .. "}")
    end
    assert.is_truthy(agent_run.wait_for(function() return sent() == 100 end), agent:log_text())
    assert.equal(1, agent:metric("container_net_tcp_successful_connects_total{" .. DL .. "}"))
    assert.equal(0.002, agent:metric("container_net_tcp_connection_time_seconds_total{" .. DL .. "}"))
    assert.equal(1, agent:metric("container_net_tcp_active_connections{" .. DL .. "}"))
    assert.equal(1, agent:metric("container_http_requests_total{" .. DL .. ',status="5xx"}'))
    assert.equal(1, agent:metric("container_http_requests_duration_seconds_total_count{" .. DL .. "}"))
    assert.truthy(agent:get("/metrics"):find("# TYPE container_http_requests_duration_seconds_total histogram",
      1, true))

    agent:signal("HUP")
    local done = agent_run.wait_for(function()
      return agent:metric("spec_version") == 2 and sent() == 160
    end)
    assert.is_truthy(done, "bytes sent: " .. tostring(sent()) .. "\n" .. agent:log_text())
    assert.equal(40, agent:metric("container_net_tcp_bytes_received_total{" .. DL .. "}"))
    assert.equal(0, agent:metric("container_net_tcp_active_connections{" .. DL .. "}"))
    assert.equal(0, agent:metric("moonrover_net_metrics_series_dropped_total"))
  end)
end)
