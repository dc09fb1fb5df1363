-- kubectl_offline.lua - kubectl without a cluster: the API discovery documents
-- kubectl caches (APIGroupList, and one APIResourceList per group version, as
-- an API server serves them at /api and /apis), written into a --cache-dir for
-- a server that is never reached. kubectl then maps kinds to resources from
-- the cache (it trusts it for hours), so `kubectl create --dry-run=client`
-- decodes manifests offline, and a kind the API has not is still refused.
local cjson = require("cjson")

local _M = {}

-- group version -> { plural, kind, namespaced } of the kinds the manifests use
local RESOURCES = {
  ["v1"] = {
    { "namespaces", "Namespace", false }, { "serviceaccounts", "ServiceAccount", true },
    { "configmaps", "ConfigMap", true }, { "pods", "Pod", true }, { "services", "Service", true },
    { "nodes", "Node", false },
  },
  ["apps/v1"] = {
    { "daemonsets", "DaemonSet", true }, { "deployments", "Deployment", true },
    { "replicasets", "ReplicaSet", true }, { "statefulsets", "StatefulSet", true },
  },
  ["batch/v1"] = { { "jobs", "Job", true }, { "cronjobs", "CronJob", true } },
  ["rbac.authorization.k8s.io/v1"] = {
    { "clusterroles", "ClusterRole", false }, { "clusterrolebindings", "ClusterRoleBinding", false },
    { "roles", "Role", true }, { "rolebindings", "RoleBinding", true },
  },
}

-- The address kubectl is given; nothing listens on port 1.
_M.server = "https://127.0.0.1:1"

local function write(path, doc)
  assert(os.execute("mkdir -p '" .. path:match("^(.*)/[^/]+$") .. "'") == 0)
  local fh = assert(io.open(path, "w"))
  assert(fh:write(cjson.encode(doc)))
  assert(fh:close())
end

-- Fills cache_dir with the discovery of _M.server.
function _M.write_cache(cache_dir)
  local dir = cache_dir .. "/discovery/127.0.0.1_1"
  local groups, by_name = {}, {}
  for gv in pairs(RESOURCES) do
    local name, version = gv:match("^(.-)/?([^/]+)$")
    local entry = { groupVersion = gv, version = version }
    if not by_name[name] then
      by_name[name] = { name = name, versions = {}, preferredVersion = entry }
      groups[#groups + 1] = by_name[name]
    end
    table.insert(by_name[name].versions, entry)
    local resources = {}
    for i, r in ipairs(RESOURCES[gv]) do
      resources[i] = { name = r[1], singularName = r[2]:lower(), kind = r[2], namespaced = r[3],
        verbs = { "create", "delete", "get", "list", "patch", "update", "watch" } }
    end
    write(dir .. "/" .. gv .. "/serverresources.json",
      { kind = "APIResourceList", apiVersion = "v1", groupVersion = gv, resources = resources })
  end
  write(dir .. "/servergroups.json", { kind = "APIGroupList", apiVersion = "v1", groups = groups })
end

return _M
