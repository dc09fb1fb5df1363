-- agent_kube_start_spec.lua - `moonrover agent --config FILE` with
-- process_discovery.kubernetes.active refuses to start, exit 1 and one
-- line, when the API server says the node does not exist, and when no API
-- server is to be found (no in-cluster variables, no kubeconfig).
local agent_run = require("support.agent_run")
local e2e = require("support.e2e")
local kube_api = require("support.kube_api")
local write = require("support.files").write

-- Longest the agent may take to refuse: the node check waits up to 5 s; an
-- agent that started instead runs until killed, which fails the case.
local REFUSE_S = 20

local CONFIG = [[
process_discovery:
  kubernetes:
    active: true
    node_name: <node>
]]

describe("the agent with Kubernetes discovery active", function()
  local env = agent_run.each_test(before_each, after_each)

  -- Runs the agent on CONFIG for node with env words (shell words) and no
  -- in-cluster variables; its exit code and stderr.
  local function agent(node, words)
    local cfg = env.dir .. "/rover.yaml"
    write(cfg, (CONFIG:gsub("<node>", node)))
    local code, _, err = e2e.run(string.format(
      "env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT %s timeout -s KILL %d %s agent --config %s "
        .. "--http 127.0.0.1:0 --pid-file off", words, REFUSE_S, e2e.quote(e2e.bin), e2e.quote(cfg)))
    return code, err
  end

  it("exits 1 with one line when the node does not exist", function()
    local stub = assert(kube_api.start({ node = "node-a" }))
    local code, err = agent("node-z", "KUBECONFIG=" .. e2e.quote(stub:kubeconfig(env.dir .. "/kubeconfig")))
    stub:stop()
    e2e.rmdir(stub.dir)
    assert.equals(1, code, err)
    assert.matches('^moonrover agent: process_discovery%.kubernetes%.node_name is "node%-z" but the API server at '
      .. 'https://127%.0%.0%.1:%d+ answered: node "node%-z" not found\n$', err)
  end)

  it("exits 1 with one line when no API server is to be found", function()
    local code, err = agent("node-a", "-u KUBECONFIG HOME=" .. e2e.quote(env.dir))
    assert.equals(1, code, err)
    assert.matches("^moonrover agent: process_discovery%.kubernetes%.active is true but no Kubernetes API server "
      .. "was found: [^\n]*ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false[^\n]*\n$", err)
  end)
end)
