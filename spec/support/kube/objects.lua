-- objects.lua - Kubernetes objects for the stand-in API server
-- (spec/support/kube/kube_stub.py), shaped as the API reference documents
-- Pod v1, Service v1, Node v1 and the owners of pods; the server fills uid,
-- creationTimestamp and resourceVersion when they are put. Lists are left
-- out rather than empty (cjson writes an empty table as {}).
local _M = {}

local OWNER_VERSIONS = { ReplicaSet = "apps/v1", Deployment = "apps/v1", StatefulSet = "apps/v1",
  DaemonSet = "apps/v1", Job = "batch/v1", CronJob = "batch/v1" }

local function now()
  return os.date("!%Y-%m-%dT%H:%M:%SZ")
end

-- 64 random hex digits, as container runtimes name containers.
function _M.container_id()
  local fh = assert(io.open("/dev/urandom", "rb"))
  local bytes = fh:read(32)
  fh:close()
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

-- The ownerReferences entry naming a stored object (put returns it with its uid).
function _M.owner_ref(owner)
  return { apiVersion = owner.apiVersion, kind = owner.kind, name = owner.metadata.name,
    uid = owner.metadata.uid, controller = true, blockOwnerDeletion = true }
end

local function metadata(opts)
  return { name = opts.name, namespace = opts.namespace or "default", labels = opts.labels,
    ownerReferences = opts.owner and { _M.owner_ref(opts.owner) } or nil }
end

local function env_list(env)
  local names, out = {}, {}
  for k in pairs(env or {}) do
    names[#names + 1] = k
  end
  table.sort(names)
  for i, k in ipairs(names) do
    out[i] = { name = k, value = env[k] }
  end
  return #out > 0 and out or nil
end

local function container_spec(c)
  local ports
  for i, p in ipairs(c.ports or {}) do
    ports = ports or {}
    ports[i] = { containerPort = p, protocol = "TCP" }
  end
  return { name = c.name, image = c.image or "registry.local/" .. c.name .. ":1", ports = ports,
    env = env_list(c.env), imagePullPolicy = "IfNotPresent", terminationMessagePath = "/dev/termination-log",
    terminationMessagePolicy = "File" }
end

local function container_status(c, started)
  return { name = c.name, containerID = (c.runtime or "containerd") .. "://" .. (c.id or _M.container_id()),
    image = c.image or "registry.local/" .. c.name .. ":1",
    imageID = "registry.local/" .. c.name .. "@sha256:" .. string.rep("0", 64),
    ready = true, started = true, restartCount = 0, state = { running = { startedAt = started } } }
end

-- A running pod. opts: name, namespace ("default"), labels, owner (a stored
-- object), node, pod_ip ("10.244.0.10"), host_ip ("127.0.0.1"), containers
-- = { { name, id (64 hex; default random), runtime ("containerd"; or
-- "cri-o", "docker"), image, ports = { n }, env = { NAME = value } } }.
function _M.pod(opts)
  local started = now()
  local pod_ip, host_ip = opts.pod_ip or "10.244.0.10", opts.host_ip or "127.0.0.1"
  local specs, statuses = {}, {}
  assert(opts.containers and #opts.containers > 0, "a pod needs at least one container")
  for i, c in ipairs(opts.containers) do
    specs[i], statuses[i] = container_spec(c), container_status(c, started)
  end
  local conditions = {}
  for i, t in ipairs({ "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled" }) do
    conditions[i] = { type = t, status = "True", lastTransitionTime = started }
  end
  return { kind = "Pod", apiVersion = "v1", metadata = metadata(opts),
    spec = { nodeName = opts.node, containers = specs, restartPolicy = "Always", dnsPolicy = "ClusterFirst",
      serviceAccountName = "default", schedulerName = "default-scheduler", terminationGracePeriodSeconds = 30,
      enableServiceLinks = true, preemptionPolicy = "PreemptLowerPriority", priority = 0 },
    status = { phase = "Running", conditions = conditions, hostIP = host_ip, hostIPs = { { ip = host_ip } },
      podIP = pod_ip, podIPs = { { ip = pod_ip } }, startTime = started, containerStatuses = statuses,
      qosClass = "BestEffort" } }
end

-- A ClusterIP service. opts: name, namespace ("default"), selector (labels),
-- ports = { n } (each also the target port), cluster_ip ("10.96.0.20").
function _M.service(opts)
  local ports
  for i, p in ipairs(opts.ports or {}) do
    ports = ports or {}
    ports[i] = { name = "port-" .. p, protocol = "TCP", port = p, targetPort = p }
  end
  local ip = opts.cluster_ip or "10.96.0.20"
  return { kind = "Service", apiVersion = "v1", metadata = metadata(opts),
    spec = { type = "ClusterIP", selector = opts.selector, ports = ports, clusterIP = ip, clusterIPs = { ip },
      sessionAffinity = "None", ipFamilies = { "IPv4" }, ipFamilyPolicy = "SingleStack",
      internalTrafficPolicy = "Cluster" },
    status = { loadBalancer = {} } }
end

-- A ready node. opts: name, ip ("127.0.0.1").
function _M.node(opts)
  local ip = opts.ip or "127.0.0.1"
  return { kind = "Node", apiVersion = "v1",
    metadata = { name = opts.name, labels = { ["kubernetes.io/hostname"] = opts.name,
      ["kubernetes.io/os"] = "linux", ["kubernetes.io/arch"] = "amd64" } },
    spec = { podCIDR = "10.244.0.0/24", podCIDRs = { "10.244.0.0/24" } },
    status = { addresses = { { type = "InternalIP", address = ip }, { type = "Hostname", address = opts.name } },
      conditions = { { type = "Ready", status = "True", reason = "KubeletReady", lastHeartbeatTime = now(),
        lastTransitionTime = now() } },
      nodeInfo = { architecture = "amd64", operatingSystem = "linux", osImage = "Debian GNU/Linux 12 (bookworm)",
        containerRuntimeVersion = "containerd://1.7.24", kubeletVersion = "v1.31.4", kernelVersion = "6.1.0" } } }
end

-- A pod's owner (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job,
-- CronJob). opts: kind, name, namespace ("default"), labels (also its
-- selector), owner (a stored object: a Deployment for a ReplicaSet, a
-- CronJob for a Job).
function _M.owner(opts)
  local version = assert(OWNER_VERSIONS[opts.kind], "not a kind that owns pods: " .. tostring(opts.kind))
  local spec
  if opts.kind == "CronJob" then
    spec = { schedule = "*/5 * * * *", concurrencyPolicy = "Allow", jobTemplate = { spec = {} } }
  elseif opts.labels then
    spec = { selector = { matchLabels = opts.labels }, template = { metadata = { labels = opts.labels } } }
  end
  return { kind = opts.kind, apiVersion = version, metadata = metadata(opts), spec = spec }
end

return _M
