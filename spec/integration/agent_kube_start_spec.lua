-- agent_kube_start_spec.lua - `moonrover agent --config FILE` with
-- process_discovery.kubernetes.active refuses to start, exit 1 and one
-- line, when the API server says the node does not exist, and when no API
-- server is to be found (no in-cluster variables, no kubeconfig).
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

local function lines_of(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    out[#out + 1] = line
  end
  return out
end

describe("the agent with Kubernetes discovery active", function()
  local dir

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    e2e.rmdir(dir)
  end)

  -- Runs the agent on CONFIG for node with env (shell words) and no in-cluster
  -- variables; exit code and the lines of its stderr.
  local function agent(node, env)
    local cfg = dir .. "/rover.yaml"
    write(cfg, (CONFIG:gsub("<node>", node)))
    local code, _, err = e2e.run(string.format(
      "env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT %s timeout -s KILL %d %s agent --config %s "
        .. "--http 127.0.0.1:0 --pid-file off", env, REFUSE_S, e2e.quote(e2e.bin), e2e.quote(cfg)))
    return code, lines_of(err)
  end

  it("exits 1 with one line when the node does not exist", function()
    local stub = assert(kube_api.start({ node = "node-a" }))
    local code, lines = agent("node-z", "KUBECONFIG=" .. e2e.quote(stub:kubeconfig(dir .. "/kubeconfig")))
    stub:stop()
    e2e.rmdir(stub.dir)
    assert.equals(1, code, table.concat(lines, "\n"))
    assert.equals(1, #lines, table.concat(lines, "\n"))
    assert.matches('^moonrover agent: process_discovery%.kubernetes%.node_name is "node%-z" but the API server at '
      .. "https://127%.0%.0%.1:%d+ answered: .*node%-z.*not found", lines[1])
  end)

  it("exits 1 with one line when no API server is to be found", function()
    local code, lines = agent("node-a", "-u KUBECONFIG HOME=" .. e2e.quote(dir))
    assert.equals(1, code, table.concat(lines, "\n"))
    assert.equals(1, #lines, table.concat(lines, "\n"))
    assert.matches("^moonrover agent: process_discovery%.kubernetes%.active is true but no Kubernetes API server "
      .. "was found: .*ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false", lines[1])
  end)
end)
