-- kube_pods.lua - a stand-in kubelet for end-to-end specs: a pod's
-- containers are cgroups laid out as the kubelet's systemd driver and
-- containerd make them (/kubepods.slice/kubepods-besteffort.slice/
-- kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope), real
-- processes run in them, and the pod object the stand-in API server
-- (support/kube_api.lua) serves names the same container ids.
--
--   local pod = kube_pods.new(stub, dir, { namespace = "shop", name = "cart-1", node = "node-a",
--     labels = { app = "cart" }, containers = { { name = "cart" } } })
--   local pid = pod.containers.cart:start(cmd)   -- a servers.lua cgroup: start, pids, stop
--   assert(pod:put())                             -- the API server has the pod from now on
--   pod:remove()                                  -- deleted there; its processes stopped, cgroups gone
--
-- kubepods.slice and kubepods-besteffort.slice are left in place once made:
-- specs running at the same time share them, and removing one while another
-- spec makes its pod below it would fail that spec's mkdir.
local kube_api = require("support.kube_api")
local servers = require("support.servers")

local _M = {}
local Pod = {}
Pod.__index = Pod

local QOS_SLICE = "/kubepods.slice/kubepods-besteffort.slice"

-- A pod uid as the API server makes them (8-4-4-4-12 hex digits).
local function new_uid()
  local hex = kube_api.container_id()
  return string.format("%s-%s-%s-%s-%s", hex:sub(1, 8), hex:sub(9, 12), hex:sub(13, 16), hex:sub(17, 20),
    hex:sub(21, 32))
end

-- The pod's cgroup (systemd writes the uid's dashes as underscores).
local function pod_slice(uid)
  return QOS_SLICE .. "/kubepods-besteffort-pod" .. uid:gsub("-", "_") .. ".slice"
end

-- A pod on stub for dir's case, not put yet. opts: as kube_api.pod's
-- (namespace, name, node, labels, owner, containers = { { name, env } }):
-- each container gets an id and its cgroup, pod.containers[name].
function _M.new(stub, dir, opts)
  local self = setmetatable({ stub = stub, dir = dir, opts = opts, uid = new_uid(), containers = {} }, Pod)
  self.slice = pod_slice(self.uid)
  local specs = {}
  for i, c in ipairs(opts.containers) do
    local id = kube_api.container_id()
    local cg = servers.cgroup(self.slice .. "/cri-containerd-" .. id .. ".scope", { self.slice })
    cg.container_id, cg.name = id, c.name
    self.containers[c.name] = cg
    specs[i] = { name = c.name, id = id, env = c.env, ports = c.ports }
  end
  self.specs = specs
  return self
end

-- The pod object as the API server is given it.
function Pod:object()
  local o = self.opts
  return kube_api.pod({ namespace = o.namespace, name = o.name, node = o.node, labels = o.labels,
    owner = o.owner, containers = self.specs })
end

-- Puts the pod on the API server (watches see it ADDED, then MODIFIED when
-- put again); returns the stored object, or nil and why.
function Pod:put()
  return self.stub:add_pod(self:object())
end

-- Deletes the pod from the API server, stops its processes and removes its
-- cgroups. Safe after a failed put.
function Pod:remove()
  self.stub:delete_pod(self.opts.namespace or "default", self.opts.name)
  for _, cg in pairs(self.containers) do
    cg:remove()
  end
end

return _M
