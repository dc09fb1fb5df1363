-- agent_kube_spec.lua - `moonrover agent --config FILE` with Kubernetes
-- discovery active and KUBECONFIG naming the stand-in API server: the
-- agent opens its client (kube/agent_client.lua), the moonrover_kube_*
-- metrics follow the client's status, a script reads the client's changes
-- through client.agent(), and the agent stops cleanly with it.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local kube_api = require("support.kube_api")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- Keeps a gauge of the pods this script's feed holds; says so when the
-- agent has no client.
local SCRIPT = [[
local agent = require("moonrover.agent")
local client = require("moonrover.kube.client")
local pods = agent.gauge("spec_kube_pods", "Pods the script's feed holds")
local held = {}
agent.every(0.2, function()
  local feed = client.agent()
  if not feed then
    agent.log.warn("no Kubernetes client")
    return
  end
  for rec in feed:changes() do
    if rec.kind == "pod" and rec.object then
      held[rec.object.metadata.uid] = rec.type ~= "DELETED" or nil
    end
  end
  local n = 0
  for _ in pairs(held) do
    n = n + 1
  end
  pods:set(n)
end)
]]

-- Kubernetes discovery alone: without a core section the Rover drop-in
-- stays off.
local CONFIG = [[
process_discovery:
  kubernetes:
    active: true
    node_name: node-a
]]

local function pod(name)
  return kube_api.pod({ namespace = "shop", name = name, node = "node-a", containers = { { name = "app" } } })
end

describe("the agent with a Kubernetes client (end to end)", function()
  local stub

  local env = agent_run.each_test(before_each, after_each, {
    set_up = function()
      stub = assert(kube_api.start({ node = "node-a" }))
    end,
    tear_down = function()
      stub:stop()
      e2e.rmdir(stub.dir)
    end,
  })

  it("exports the client's status as metrics and gives scripts its changes", function()
    assert(stub:add_pod(pod("cart-1")))
    assert(stub:add_service(kube_api.service({ namespace = "shop", name = "cart", selector = { app = "cart" } })))
    write(env.scripts .. "/kube_probe.lua", SCRIPT)
    write(env.dir .. "/rover.yaml", CONFIG)
    local kubeconfig = stub:kubeconfig(env.dir .. "/kubeconfig")
    local agent = env:start("--config " .. e2e.quote(env.dir .. "/rover.yaml"), "KUBECONFIG=" .. e2e.quote(kubeconfig))
    assert(agent.port, "the agent did not start: " .. agent:log_tail())
    assert(agent_run.wait_for(function() return agent:metric("spec_kube_pods") == 1 end, 20),
      "the script saw no pod: " .. agent:log_tail())
    -- The agent copies the client's status into its metrics once a second.
    agent_run.wait_for(function() return agent:metric('moonrover_kube_synced{kind="service"}') == 1 end, 5)
    assert.equals(1, agent:metric('moonrover_kube_synced{kind="pod"}'))
    assert.equals(1, agent:metric('moonrover_kube_synced{kind="service"}'))
    assert.equals(1, agent:metric('moonrover_kube_objects{kind="pod"}'))
    assert.equals(1, agent:metric('moonrover_kube_objects{kind="service"}'))
    assert.equals(1, agent:metric("moonrover_kube_connected"))
    assert.equals(2, agent:metric("moonrover_kube_lists_total"))
    assert.equals(0, agent:metric("moonrover_kube_errors_total"))

    assert(stub:add_pod(pod("cart-2")))
    assert(agent_run.wait_for(function() return agent:metric("spec_kube_pods") == 2 end, 20),
      "the script did not see the new pod: " .. agent:log_tail())
    assert(agent_run.wait_for(function() return agent:metric("moonrover_kube_events_total") == 1 end, 5),
      "moonrover_kube_events_total did not follow the watch")
    assert.equals(0, agent:stop())
    env.agent = nil
    assert.equals(0, agent_run.count(agent:log_text(), "no Kubernetes client"))
  end)
end)
