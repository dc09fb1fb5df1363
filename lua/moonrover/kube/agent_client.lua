-- agent_client.lua - the agent's one Kubernetes client, as the --config
-- file's process_discovery.kubernetes asks: found (kube/access.lua),
-- opened, its node checked and its list and watch started before the agent
-- runs, so that a wrong setting stops the start with one clear line, as
-- Rover stops.
--
-- As with Rover's other modules, the defaults alone start nothing: the
-- file must have a process_discovery section, whose kubernetes.active is
-- true by default (Rover's). The client module is required only then.
local access = require("moonrover.kube.access")
local config = require("moonrover.config")

local _M = {}

-- How long the node check may wait for the API server.
_M.NODE_CHECK_MS = 5000

local OFF_HINT = "; set ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE=false to discover host processes only"

-- What cfg (a loaded config, or nil) asks of Kubernetes discovery:
-- { active, node_name, namespaces ("" for all, else "a,b") }.
function _M.settings(cfg)
  if not (cfg and config.has_section(cfg, "process_discovery")) then
    return { active = false }
  end
  local namespaces = config.get_list(cfg, "process_discovery.kubernetes.namespaces") or {}
  return {
    active = config.get_bool(cfg, "process_discovery.kubernetes.active") == true,
    node_name = config.get_string(cfg, "process_discovery.kubernetes.node_name") or "",
    namespaces = table.concat(namespaces, ","),
  }
end

local function environment()
  return setmetatable({}, { __index = function(_, name) return os.getenv(name) end })
end

-- The started client cfg asks for; false when Kubernetes discovery is not
-- active; nil and one line when it cannot be had. deps (all optional, for
-- specs): env (a table of the environment), read_file(path) -> text or nil
-- and why, client (the module with open(opts)).
function _M.open(cfg, deps)
  local s = _M.settings(cfg)
  if not s.active then
    return false
  end
  deps = deps or {}
  local opts, err = access.resolve(deps.env or environment(), deps.read_file or config.read)
  if not opts then
    return nil, "process_discovery.kubernetes.active is true but no Kubernetes API server was found: " .. err
      .. OFF_HINT
  end
  if s.node_name == "" then
    return nil, "process_discovery.kubernetes.active is true but process_discovery.kubernetes.node_name is empty: "
      .. "set ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME to this node's name (a pod's spec.nodeName)" .. OFF_HINT
  end
  opts.node_name, opts.namespaces = s.node_name, s.namespaces
  local client = deps.client or require("moonrover.kube.client")
  local k
  k, err = client.open(opts)
  if not k then
    return nil, "kubernetes client for " .. opts.server .. ": " .. err
  end
  local ok
  ok, err = k:check_node(_M.NODE_CHECK_MS)
  if not ok then
    k:close()
    return nil, "process_discovery.kubernetes.node_name is \"" .. s.node_name .. "\" but the API server at "
      .. opts.server .. " answered: " .. err
  end
  ok, err = k:start()
  if not ok then
    k:close()
    return nil, "kubernetes client for " .. opts.server .. ": " .. err
  end
  return k
end

return _M
