-- pods.lua - the pods of this node and the cluster's services, kept up to
-- date from a feed of the API server's changes (kube/client.lua's, or a fake
-- with the same changes() and get() in specs): a pod by the id of one of its
-- containers, the service that selects a pod (Rover's rule), and a pod's
-- owners, walked through the API.
--
-- A feed's records are { kind = "pod" | "service", type = "ADDED" |
-- "MODIFIED" | "DELETED" | "SYNCED", object = {...} }, and { type = "RESET" }
-- when the feed's log no longer held what came after the last record read:
-- every current object then follows as ADDED, and what is not among them by
-- the end of that update() is gone.
local _M = {}

local Index = {}
Index.__index = Index

-- Deeper owner chains than this are taken for a loop of references.
local MAX_OWNERS = 8

-- The container id of a containerStatuses[].containerID: the runtime's
-- prefix ("containerd://", "cri-o://", "docker://") stripped, lowercase.
function _M.container_id(text)
  if type(text) ~= "string" or text == "" then
    return nil
  end
  return (text:gsub("^[%w%.%-]+://", "")):lower()
end

local function key_of(obj)
  local md = obj.metadata or {}
  return md.uid or ((md.namespace or "") .. "/" .. (md.name or ""))
end

local function namespace_of(obj)
  return (obj.metadata or {}).namespace or "default"
end

local STATUS_LISTS = { "containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses" }
local SPEC_LISTS = { "containers", "initContainers", "ephemeralContainers" }

-- new(feed): an empty index over feed; update() fills it.
function _M.new(feed)
  return setmetatable({
    feed = feed,
    pods = {}, -- key -> pod
    containers = {}, -- container id -> { pod, status }
    services = {}, -- namespace -> key -> service
    kinds_synced = {},
    owner_lists = {}, -- pod key -> owners list
    listeners = {},
    stale = nil, -- after a RESET: { pods = {key=true}, services = {key=namespace} } not seen again yet
  }, Index)
end

function Index:forget_containers(pod)
  local status = pod.status or {}
  for _, list in ipairs(STATUS_LISTS) do
    for _, cs in ipairs(status[list] or {}) do
      local id = _M.container_id(cs.containerID)
      local entry = id and self.containers[id]
      if entry and entry.pod == pod then
        self.containers[id] = nil
      end
    end
  end
end

function Index:notify(type, pod)
  for _, fn in ipairs(self.listeners) do
    fn(type, pod)
  end
end

function Index:remove_pod(key, type)
  local old = self.pods[key]
  if not old then
    return
  end
  self:forget_containers(old)
  self.pods[key], self.owner_lists[key] = nil, nil
  self:notify(type, old)
end

function Index:put_pod(type, pod)
  local key = key_of(pod)
  local old = self.pods[key]
  if old then
    self:forget_containers(old)
  end
  self.pods[key], self.owner_lists[key] = pod, nil
  local status = pod.status or {}
  for _, list in ipairs(STATUS_LISTS) do
    for _, cs in ipairs(status[list] or {}) do
      local id = _M.container_id(cs.containerID)
      if id then
        self.containers[id] = { pod = pod, status = cs }
      end
    end
  end
  if self.stale then
    self.stale.pods[key] = nil
  end
  self:notify(old and type == "ADDED" and "MODIFIED" or type, pod)
end

-- Services are of the whole cluster, and each script state that asks keeps
-- its own index: only what service_name reads is kept of each.
function Index:put_service(obj)
  local md = obj.metadata or {}
  local svc = { metadata = { name = md.name, namespace = md.namespace, uid = md.uid },
    spec = { selector = (obj.spec or {}).selector } }
  local ns = namespace_of(svc)
  local in_ns = self.services[ns]
  if not in_ns then
    in_ns = {}
    self.services[ns] = in_ns
  end
  in_ns[key_of(svc)] = svc
  if self.stale then
    self.stale.services[key_of(svc)] = nil
  end
end

function Index:remove_service(ns, key)
  local in_ns = self.services[ns]
  if in_ns then
    in_ns[key] = nil
    if next(in_ns) == nil then
      self.services[ns] = nil
    end
  end
end

-- A RESET: everything known is stale until it is ADDED again.
function Index:begin_reset()
  local stale = { pods = {}, services = {} }
  for key in pairs(self.pods) do
    stale.pods[key] = true
  end
  for ns, in_ns in pairs(self.services) do
    for key in pairs(in_ns) do
      stale.services[key] = ns
    end
  end
  self.stale = stale
end

function Index:end_reset()
  local stale = self.stale
  self.stale = nil
  for key in pairs(stale.pods) do
    self:remove_pod(key, "DELETED")
  end
  for key, ns in pairs(stale.services) do
    self:remove_service(ns, key)
  end
end

function Index:apply(rec)
  local t, obj = rec.type, rec.object
  if t == "RESET" then
    return self:begin_reset()
  end
  if t == "SYNCED" then
    self.kinds_synced[rec.kind] = true
    return
  end
  if type(obj) ~= "table" then
    return
  end
  if rec.kind == "pod" then
    if t == "DELETED" then
      self:remove_pod(key_of(obj), "DELETED")
    else
      self:put_pod(t, obj)
    end
  elseif rec.kind == "service" then
    if t == "DELETED" then
      self:remove_service(namespace_of(obj), key_of(obj))
    else
      self:put_service(obj)
    end
  end
end

-- Applies every change the feed has; cheap when there is none.
function Index:update()
  for rec in self.feed:changes() do
    self:apply(rec)
  end
  if self.stale then
    self:end_reset()
  end
end

-- true once pods and services have both been listed in full.
function Index:synced()
  return self.kinds_synced.pod == true and self.kinds_synced.service == true
end

-- The pod whose container has id (64 hex digits; a runtime prefix is
-- stripped), and that container's status entry; nil when none has.
function Index:container(id)
  local entry = self.containers[_M.container_id(id) or ""]
  if entry then
    return entry.pod, entry.status
  end
  return nil
end

-- The spec of the container named name in pod (containers, init and
-- ephemeral containers), or nil.
function _M.spec_container(pod, name)
  local spec = pod.spec or {}
  for _, list in ipairs(SPEC_LISTS) do
    for _, c in ipairs(spec[list] or {}) do
      if c.name == name then
        return c
      end
    end
  end
  return nil
end
Index.spec_container = _M.spec_container

-- Whether labels hold every key of the map selector with its value (an
-- empty selector matches any labels).
function _M.labels_match(selector, labels)
  for k, v in pairs(selector) do
    if labels[k] ~= v then
      return false
    end
  end
  return true
end

local function selects(selector, labels)
  return type(selector) == "table" and next(selector) ~= nil and _M.labels_match(selector, labels)
end

-- The name of the service that selects pod, as Rover names it: among the
-- services of the pod's namespace whose selector is not empty and matches
-- the pod's labels, the shortest name, then the first in byte order; nil
-- when none does.
function Index:service_name(pod)
  local labels = (pod.metadata or {}).labels or {}
  local best
  for _, svc in pairs(self.services[namespace_of(pod)] or {}) do
    local name = (svc.metadata or {}).name
    if name and selects((svc.spec or {}).selector, labels) then
      if not best or #name < #best or (#name == #best and name < best) then
        best = name
      end
    end
  end
  return best
end

-- The API path of the object an owner reference names, in namespace ns.
local function owner_path(ref, ns)
  local version = ref.apiVersion or "v1"
  local base = version:find("/", 1, true) and "/apis/" .. version or "/api/" .. version
  local plural = ref.kind:lower()
  if plural:find("s$") then
    plural = plural .. "es"
  elseif plural:find("[^aeiou]y$") then
    plural = plural:sub(1, -2) .. "ies"
  else
    plural = plural .. "s"
  end
  return base .. "/namespaces/" .. ns .. "/" .. plural .. "/" .. ref.name
end
_M.owner_path = owner_path

local function controller_of(obj)
  for _, ref in ipairs((obj.metadata or {}).ownerReferences or {}) do
    if ref.controller and ref.kind and ref.name then
      return ref
    end
  end
  return nil
end

-- pod's owners, its controller first, each { kind =, name = }, walked
-- through the controller references of each owner (fetched with feed:get):
-- { {kind="ReplicaSet"}, {kind="Deployment"} }; {} for a pod nobody owns.
-- nil and "pending" while an owner is being fetched; nil and why when one
-- cannot be. An owner that no longer exists ends the walk.
function Index:owners(pod)
  local key = key_of(pod)
  local known = self.owner_lists[key]
  if known then
    return known
  end
  local ns, list, ref = namespace_of(pod), {}, controller_of(pod)
  while ref and #list < MAX_OWNERS do
    list[#list + 1] = { kind = ref.kind, name = ref.name }
    local obj, why = self.feed:get(owner_path(ref, ns))
    if not obj then
      if why ~= "not found" then
        return nil, why
      end
      break
    end
    ref = controller_of(obj)
  end
  if self.pods[key] == pod then
    self.owner_lists[key] = list
  end
  return list
end

-- An iterator over the pods known.
function Index:each_pod()
  local key
  return function()
    local pod
    key, pod = next(self.pods, key)
    return pod
  end
end

-- fn(type, pod) is called after update() applies a change of a pod (type
-- "ADDED", "MODIFIED" or "DELETED"; a pod gone after a RESET is DELETED).
function Index:on_change(fn)
  self.listeners[#self.listeners + 1] = fn
end

return _M
