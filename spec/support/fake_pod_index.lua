-- fake_pod_index.lua - a stand-in for kube/pods.lua's index in unit specs:
-- pods shaped as the API server returns them, the index's lookups over
-- them, and owners that can be made to wait as a fetch from the API does.
--
--   local index = fake_pod_index.new()
--   local pod = index:add(fake_pod_index.pod({ name = "cart-1", namespace = "shop",
--     labels = { app = "cart" }, containers = { { name = "app", id = ("a"):rep(64) } } }))
--   index:set_service(pod, "cart")                 -- what service_name(pod) gives
--   index:set_owners(pod, { { kind = "ReplicaSet", name = "cart-7d9" } })  -- or "pending"
--   index.listed = false                           -- what synced() gives (true at first)
local _M = {}
local mt = { __index = _M }

-- A Pod object: opts.name, namespace, node, ip, labels, owners (ownerReferences),
-- containers = { { name, id (64 hex), runtime ("containerd"), env = { { name, value } } } }.
function _M.pod(opts)
  local spec_containers, statuses = {}, {}
  for i, c in ipairs(opts.containers) do
    spec_containers[i] = { name = c.name, image = c.name .. ":1", env = c.env }
    statuses[i] = { name = c.name, ready = true, restartCount = 0, image = c.name .. ":1",
      containerID = (c.runtime or "containerd") .. "://" .. c.id, started = true }
  end
  return {
    apiVersion = "v1",
    kind = "Pod",
    metadata = { name = opts.name, namespace = opts.namespace or "default", uid = opts.name .. "-uid",
      labels = opts.labels or {}, ownerReferences = opts.owners },
    spec = { nodeName = opts.node or "node-1", containers = spec_containers },
    status = { phase = "Running", podIP = opts.ip or "10.244.0.9", containerStatuses = statuses },
  }
end

function _M.new()
  return setmetatable({ pods = {}, by_id = {}, services = {}, owner_lists = {}, listed = true, updates = 0 }, mt)
end

function _M:add(pod)
  self.pods[#self.pods + 1] = pod
  for _, s in ipairs(pod.status.containerStatuses) do
    self.by_id[s.containerID:match("://(%x+)$")] = { pod, s }
  end
  return pod
end

function _M:set_service(pod, name)
  self.services[pod] = name
end

function _M:set_owners(pod, owners)
  self.owner_lists[pod] = owners
end

function _M:update()
  self.updates = self.updates + 1
end

function _M:synced()
  return self.listed
end

function _M:container(id)
  local hit = self.by_id[id]
  if hit then
    return hit[1], hit[2]
  end
  return nil
end

function _M:service_name(pod)
  return self.services[pod]
end

function _M:owners(pod)
  local owners = self.owner_lists[pod] or {}
  if owners == "pending" then
    return nil, "pending"
  end
  return owners
end

return _M
