-- agent_client_spec.lua - when the agent starts a Kubernetes client and
-- what it says when it cannot: the config file decides, the API server is
-- found, the node is checked within 5 s and the client started, each
-- failure one line; driven with a fake client module and environment.
local agent_client = require("moonrover.kube.agent_client")
local config = require("moonrover.config")

local TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
local CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
local IN_CLUSTER = { KUBERNETES_SERVICE_HOST = "10.96.0.1", KUBERNETES_SERVICE_PORT = "443" }

local function cfg(text)
  return assert(config.load_text(text, "rover.yaml"))
end

local function read_file(path)
  if path == TOKEN or path == CA then
    return "text of " .. path
  end
  return nil, "cannot open " .. path
end

-- A fake client module: open records its options; the client's
-- check_node and start answer as node and start say.
local function fake_client(node, start)
  local calls = {}
  local client = { calls = calls }
  function client.open(opts)
    calls[#calls + 1] = "open"
    client.opts = opts
    return {
      check_node = function(_, ms)
        calls[#calls + 1] = "check_node " .. ms
        return node == true, node ~= true and node or nil
      end,
      start = function()
        calls[#calls + 1] = "start"
        return start == true or nil, start ~= true and start or nil
      end,
      close = function()
        calls[#calls + 1] = "close"
      end,
    }
  end
  return client
end

local ACTIVE = "process_discovery:\n  kubernetes:\n    active: true\n    node_name: node-a\n    namespaces: shop, ops\n"

describe("the agent's Kubernetes client", function()
  it("is not started by the defaults alone, nor when the file sets active false", function()
    local client = fake_client(true, true)
    for _, text in ipairs({ "agent:\n  batch: 10\n", "process_discovery:\n  kubernetes:\n    active: false\n" }) do
      assert.is_false(agent_client.open(cfg(text), { env = IN_CLUSTER, read_file = read_file, client = client }))
    end
    assert.is_false(agent_client.open(nil, { client = client }))
    assert.same({}, client.calls)
  end)

  it("follows Rover's default when the file has a process_discovery section", function()
    local s = agent_client.settings(cfg("process_discovery:\n  heartbeat_period: 20s\n"))
    assert.same({ active = true, node_name = "", namespaces = "" }, s)
  end)

  it("opens the client found, checks the node within 5 s and starts it", function()
    local client = fake_client(true, true)
    local k = agent_client.open(cfg(ACTIVE), { env = IN_CLUSTER, read_file = read_file, client = client })
    assert.is_table(k)
    assert.same({ "open", "check_node 5000", "start" }, client.calls)
    assert.same({ server = "https://10.96.0.1:443", ca_pem = "text of " .. CA, token_file = TOKEN,
      node_name = "node-a", namespaces = "shop,ops" }, client.opts)
  end)

  it("says how to turn it off when no API server can be found", function()
    local client = fake_client(true, true)
    assert.same({ nil, "process_discovery.kubernetes.active is true but no Kubernetes API server was found: not in "
      .. "a cluster (KUBERNETES_SERVICE_HOST is not set) and no kubeconfig file (/home/u/.kube/config); set "
      .. "ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false to discover host processes only" },
      { agent_client.open(cfg(ACTIVE), { env = { HOME = "/home/u" }, read_file = read_file, client = client }) })
    assert.same({}, client.calls)
  end)

  it("refuses an empty node name before it opens anything", function()
    local client = fake_client(true, true)
    local _, err = agent_client.open(cfg("process_discovery:\n  kubernetes:\n    active: true\n"),
      { env = IN_CLUSTER, read_file = read_file, client = client })
    assert.equal("process_discovery.kubernetes.active is true but process_discovery.kubernetes.node_name is empty: "
      .. "set ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME to this node's name (a pod's spec.nodeName); set "
      .. "ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false to discover host processes only", err)
    assert.same({}, client.calls)
  end)

  it("closes the client and names the node when it does not exist", function()
    local client = fake_client('node "node-a" not found', true)
    assert.same({ nil, 'process_discovery.kubernetes.node_name is "node-a" but the API server at '
      .. 'https://10.96.0.1:443 answered: node "node-a" not found' },
      { agent_client.open(cfg(ACTIVE), { env = IN_CLUSTER, read_file = read_file, client = client }) })
    assert.same({ "open", "check_node 5000", "close" }, client.calls)
  end)

  it("passes up why the client could not be opened or started", function()
    local client = fake_client(true, "cannot start the watch thread")
    assert.same({ nil, "kubernetes client for https://10.96.0.1:443: cannot start the watch thread" },
      { agent_client.open(cfg(ACTIVE), { env = IN_CLUSTER, read_file = read_file, client = client }) })
    assert.same({ "open", "check_node 5000", "start", "close" }, client.calls)
    client.open = function() return nil, "bad CA" end
    assert.same({ nil, "kubernetes client for https://10.96.0.1:443: bad CA" },
      { agent_client.open(cfg(ACTIVE), { env = IN_CLUSTER, read_file = read_file, client = client }) })
  end)
end)
