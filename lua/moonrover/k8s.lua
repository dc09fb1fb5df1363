-- k8s.lua - the Kubernetes facts of a process for agent scripts
-- (docs/lua-api.md, "Kubernetes: moonrover.k8s"): its pod, namespace,
-- labels, container and owners, from the agent's Kubernetes client
-- (process_discovery.kubernetes) through a pod index (kube/pods.lua) that is
-- made on first use and brought up to date at most once a second, when asked.
--
-- new(opts) makes the same over another feed, cgroup reader and clock
-- (specs); the module's own functions use one made over the agent's client.
local pods = require("moonrover.kube.pods")
local container_id = require("moonrover.rover.container_id")

local _M = {}

local Source = {}
Source.__index = Source

local OFF = "kubernetes discovery is off"
local UPDATE_EVERY_S = 1

-- opts: feed (kube/client.lua's feed, or nil: discovery is off), read(pid)
-- -> the text of /proc/PID/cgroup, or nil and why; now() -> seconds.
function _M.new(opts)
  return setmetatable({ feed = opts.feed, read = opts.read, now = opts.now, pods = nil, updated_at = nil }, Source)
end

function Source:available()
  return self.feed ~= nil
end

-- The pod index, up to date within a second; nil and why when discovery is off.
function Source:index()
  if not self.feed then
    return nil, OFF
  end
  if not self.pods then
    self.pods = pods.new(self.feed)
  end
  local now = self.now()
  if not self.updated_at or now - self.updated_at >= UPDATE_EVERY_S then
    self.updated_at = now
    self.pods:update()
  end
  return self.pods
end

-- The pod of process pid: { name, namespace, uid, node, labels, container =
-- { name, id }, owner = { kind, name } (the top owner), owners = { the
-- controller first ... } } (owner and owners are nil while the owners are
-- being fetched, and owner for a pod nobody owns); or nil and why.
function Source:pod_of(pid)
  local index, off = self:index()
  if not index then
    return nil, off
  end
  local text, err = self.read(pid)
  if not text then
    return nil, err
  end
  local id = container_id.from_cgroup(text)
  if not id then
    return nil, "not in a container"
  end
  local pod, status = index:container(id)
  if not pod then
    return nil, "no pod has container " .. id
  end
  local md = pod.metadata or {}
  local owners = index:owners(pod)
  return {
    name = md.name,
    namespace = md.namespace or "default",
    uid = md.uid,
    node = (pod.spec or {}).nodeName,
    labels = md.labels or {},
    container = { name = status.name, id = id },
    owner = owners and owners[#owners],
    owners = owners,
  }
end

local shared

local function agent_source()
  if not shared then
    local clock = require("moonrover.lib.clock")
    shared = _M.new({
      feed = require("moonrover.kube.client").agent(),
      read = function(pid)
        return require("moonrover.rover.finder_facts").read(pid, "cgroup")
      end,
      now = clock.monotonic_s,
    })
  end
  return shared
end

-- true when the agent runs with Kubernetes discovery.
function _M.available()
  return agent_source():available()
end

function _M.pod_of(pid)
  return agent_source():pod_of(pid)
end

function _M.index()
  return agent_source():index()
end

return _M
