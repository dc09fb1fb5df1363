-- End-to-end spec of container ids on a cgroup layout the tracer does not
-- know: nginx runs in /moonrover-spec-unknown-CASE/app below the cgroup v2
-- root (spec/support/servers.lua), and the bundled network script's coroot
-- series name it by that path. The script logs the cgroup layout it found
-- once at start, as this spec reads it from the same mount namespace, and
-- not again at a hot reload.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local cgroup_layout = require("moonrover.lib.cgroup_layout")
local servers = require("support.servers")

local it = require("support.skip").guard(it, pending, e2e.skip_reason() or servers.cgroup_skip_reason())

local AGENT_OPTIONS = "--network on --script-memory 1024"
local WAIT_S = 20 -- a close is acted on within a second; progress events come every 5 s
local REQUESTS = 3

local NGINX_LOCATIONS = [[
    location = /ok { return 200 "ok\n"; }
]]

describe("the network tracer in moonrover agent: a cgroup of unknown layout (end to end)", function()
  local group
  local env = agent_run.each_test(before_each, after_each, {
    set_up = function(case) group = servers.unknown_cgroup(case.dir, "unknown") end,
    tear_down = function() group:remove() end,
  })

  it("names nginx's series by its cgroup path, and logs the cgroup layout once", function()
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    local nginx = servers.nginx(group, env.dir, NGINX_LOCATIONS)
    local listen_addr = "127.0.0.1:" .. nginx.port
    local listen = string.format('container_net_tcp_listen_info{container_id="%s",listen_addr="%s",proxy=""}',
      group.id, listen_addr)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(listen) == 1 end, WAIT_S),
      "no " .. listen .. "\n" .. agent:log_tail(20))

    for _ = 1, REQUESTS do
      local code, out = e2e.run("curl -s --max-time 10 http://" .. listen_addr .. "/ok")
      assert.same({ 0, "ok\n" }, { code, out })
    end
    local inbound = string.format('container_http_inbound_requests_total{container_id="%s",status="2xx"}', group.id)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric(inbound) == REQUESTS end, WAIT_S),
      inbound .. " is " .. tostring(agent:metric(inbound)) .. "\n" .. agent:log_tail(20))

    local layout = cgroup_layout.find(e2e.read_all("/proc/self/mountinfo"))
    local line = "cgroup layout: " .. cgroup_layout.describe(layout)
    assert.equal(1, agent_run.count(agent:log_text(), line), line .. " is not in the log once:\n" .. agent:log_text())
    agent:signal("HUP")
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_reloads_total") == 1 end, WAIT_S),
      "the reload did not happen:\n" .. agent:log_tail(20))
    assert.equal(1, agent_run.count(agent:log_text(), "cgroup layout"), agent:log_text())
  end)
end)
