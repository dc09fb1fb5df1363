-- coroot_container.lua - the container a process belongs to, named as
-- coroot-node-agent names it in its `container_id` label, from the text of
-- /proc/PID/cgroup; and a resolver that reads that file and caches the answer
-- by pid.
--
-- The cgroup path is chosen as coroot chooses it: "/" and "/init.scope" lines
-- are left out; a cpu or memory path under /kubepods wins, else the cgroup v2
-- path, else cpu, memory, then name=systemd. Then (lib/cgroup.lua recognises
-- the container ids):
--   a container id in the path       /docker/<id>, /containerd/<id>, /crio/<id>,
--                                    /podman/<id> (the innermost container)
--   /system.slice/<unit>/...         /system.slice/<unit> ("\x2d" read as "-");
--                                    runtime, reserved, kube, azure and
--                                    podruntime.slice alike
--   /lxc/<name>, /lxc.payload.<name> /lxc/<name>
--   /init, /system/<svc>, /podruntime/<svc>   /talos/init, /talos/<svc>
--   the root, init.scope, user.slice, /systemd/..., a systemd scope, a
--   single-component path           "/" (the host)
--   CRI-O's or podman's conmon, a pod or docker cgroup without a container id, a
--   known parent with no child (/system.slice, /system, /lxc)
--                                    false: not measured
--   any other path                   the path itself (/process_api/<id>)
-- coroot names docker containers /docker/<name> and Kubernetes ones
-- /k8s/<namespace>/<pod>/<container> from the container runtime's API;
-- moonrover reads no runtime API, so it names them by runtime and id, and a
-- pod's containers as coroot does when the agent's Kubernetes client knows
-- the pod (pod_namer, below: /k8s/..., or /k8s-cronjob/<namespace>/<cronjob>/
-- <container> for a pod of a CronJob's Job), with coroot's app_id. coroot
-- leaves host processes out; moonrover counts them all under "/". coroot
-- leaves LXC containers and unknown layouts out; moonrover names them. An
-- unknown layout is named by its path, not "/": coroot's UI names an
-- application by the last component of its container_id, which "/" lacks.
-- host_layout() says where the host's cgroup hierarchies are, for the log.
local cgroup = require("moonrover.lib.cgroup")
local cgroup_layout = require("moonrover.lib.cgroup_layout")

local _M = {}

local RUNTIME_PREFIX = { docker = "/docker/", containerd = "/containerd/", ["cri-o"] = "/crio/", podman = "/podman/" }
local SLICES = {
  ["system.slice"] = true, ["runtime.slice"] = true, ["reserved.slice"] = true,
  ["kube.slice"] = true, ["azure.slice"] = true, ["podruntime.slice"] = true,
}
local HOST_ROOTS = { ["user.slice"] = true, ["init.scope"] = true, systemd = true }

-- The path coroot takes from the lines of a /proc/PID/cgroup text.
function _M.cgroup_path(text)
  local by = {}
  for _, line in ipairs(cgroup.lines(text)) do
    local path = cgroup.clean(line.path)
    path = path:match("^/lxc%.payload%.[^/]+") or path
    if path ~= "/" and path ~= "/init.scope" then
      for _, c in ipairs(line.controllers) do
        by[c] = path
      end
    end
  end
  for _, c in ipairs({ "cpu", "memory" }) do
    if by[c] and by[c]:find("^/kubepods") then
      return by[c]
    end
  end
  return by[""] or by.cpu or by.memory or by["name=systemd"] or "/"
end

-- The id of the cgroup at path (a clean absolute path), or false when
-- processes there are not measured. systemd's "\x2d" escapes read as "-",
-- in a slice's units and in a path of unknown layout alike.
function _M.from_path(path)
  if path == "/init" then
    return "/talos/init"
  end
  local id, runtime = cgroup.container(path)
  if id == false then
    return false
  end
  if id and runtime then
    return RUNTIME_PREFIX[runtime] .. id
  end
  local parts = cgroup.split(path)
  local first, second = parts[1], parts[2]
  if first == nil or HOST_ROOTS[first] then
    return "/"
  end
  if first == "docker" or path:find("kubepods", 1, true) or (first == "system.slice" and second
      and second:find("^docker%-")) then
    return false
  end
  if first == "system" or first == "podruntime" then
    return second and "/talos/" .. second or false
  end
  if SLICES[first] then
    if path:find("%.scope$") then
      return "/"
    end
    return second and ("/" .. first .. "/" .. second):gsub("\\x2d", "-") or false
  end
  if first == "lxc" then
    return second and "/lxc/" .. second or false
  end
  local lxc = first:match("^lxc%.payload%.(.+)$")
  if lxc then
    return "/lxc/" .. lxc
  end
  if #parts < 2 then
    return "/"
  end
  return (path:gsub("\\x2d", "-"))
end

-- The id of the process whose /proc/PID/cgroup is text, or false.
function _M.from_cgroup(text)
  return _M.from_path(_M.cgroup_path(text))
end

local MOUNTINFO_MAX = 262144

-- The agent's /proc/self/mountinfo, or pid 1's under ROVER_HOST_PROC_MAPPING
-- (the host's, when the agent runs in a container); nil and why. A file
-- longer than the buffer loses its cut last line.
local function runtime_mountinfo()
  local rt = require("moonrover.rt")
  local mapped = os.getenv("ROVER_HOST_PROC_MAPPING")
  local pid = mapped and mapped ~= "" and 1 or rt.lib.mr_proc_self()
  local buf = rt.ffi.new("char[?]", MOUNTINFO_MAX)
  local n, err = rt.call(rt.lib.mr_proc_read, pid, "mountinfo", buf, MOUNTINFO_MAX)
  if not n then
    return nil, err
  end
  local text = rt.ffi.string(buf, n)
  return n < MOUNTINFO_MAX - 1 and text or text:match("^(.*\n)") or ""
end

-- The cgroup layout of the host (lib/cgroup_layout.lua) and one line saying
-- it, or nil and why. read() gives the mountinfo text (default: the
-- runtime's, above).
function _M.host_layout(read)
  local text, err = (read or runtime_mountinfo)()
  if not text then
    return nil, err
  end
  local layout = cgroup_layout.find(text)
  return layout, cgroup_layout.describe(layout)
end

-- coroot's name of the container named container of pod (a decoded Pod),
-- whose owners (kube/pods.lua's owners(), or nil while they are fetched)
-- are given: /k8s-cronjob/<namespace>/<cronjob>/<container> when the pod's
-- Job belongs to a CronJob, else /k8s/<namespace>/<pod>/<container>.
function _M.pod_name(pod, container, owners)
  local ns = pod.metadata.namespace or "default"
  if owners and owners[1] and owners[2] and owners[1].kind == "Job" and owners[2].kind == "CronJob" then
    return "/k8s-cronjob/" .. ns .. "/" .. owners[2].name .. "/" .. container
  end
  return "/k8s/" .. ns .. "/" .. pod.metadata.name .. "/" .. container
end

local RANDOM5 = string.rep("[bcdfghjklmnpqrstvwxz2456789]", 5)

-- The workload coroot's app_id names, from a pod name alone as coroot reads
-- it: a Deployment's pods are <name>-<1 to 10 hex digits>-<5 characters>, a
-- DaemonSet's <name>-<5 characters>, a StatefulSet's <name>-<ordinal>.
local function workload(pod)
  local name, hash = pod:match("^(.+)%-([0-9a-f]+)%-" .. RANDOM5 .. "$")
  if name and #hash <= 10 then
    return name
  end
  return pod:match("^(.+)%-" .. RANDOM5 .. "$") or pod:match("^(.+)%-%d+$")
end

-- coroot's app_id of a container id: /k8s/<namespace>/<workload> for a
-- /k8s/ id whose pod is named as a Deployment's, DaemonSet's or
-- StatefulSet's; nil (coroot's empty app_id) for every other id, its
-- /k8s-cronjob/ ones included.
function _M.app_id(id)
  if type(id) ~= "string" or id:sub(1, 5) ~= "/k8s/" then
    return nil
  end
  local ns, pod = id:match("^/k8s/([a-z0-9%-]+)/([a-z0-9%-]+)/.")
  local name = pod and workload(pod)
  return name and "/k8s/" .. ns .. "/" .. name or nil
end

local Namer = {}
Namer.__index = Namer

-- A namer over index (kube/pods.lua): namer:name(id) gives the coroot name
-- of a container id this module made from a runtime id (/containerd/<id>,
-- /crio/<id>, /docker/<id>) when a pod of the index has that container, and
-- id itself otherwise. Answers are cached until the index changes a pod;
-- one made while the pod's owners are fetched is not kept.
function _M.pod_namer(index)
  local self = setmetatable({ index = index, cache = {} }, Namer)
  index:on_change(function()
    self.cache = {}
  end)
  return self
end

local RUNTIME_ID = "^/[%w%-]+/(" .. string.rep("%x", 64) .. ")$"

function Namer:name(id)
  if type(id) ~= "string" then
    return id
  end
  local known = self.cache[id]
  if known then
    return known
  end
  local runtime_id = id:match(RUNTIME_ID)
  local pod, status
  if runtime_id then
    pod, status = self.index:container(runtime_id)
  end
  if not pod then
    self.cache[id] = id
    return id
  end
  local owners = self.index:owners(pod)
  local name = _M.pod_name(pod, status.name, owners)
  if owners then
    self.cache[id] = name
  end
  return name
end

local Resolver = {}
Resolver.__index = Resolver

-- The runtime's reader of /proc/PID/cgroup (ROVER_HOST_PROC_MAPPING honoured).
local function runtime_reader(pid)
  return require("moonrover.rover.finder_facts").read(pid, "cgroup")
end

-- new(opts): a resolver. opts (all optional):
--   read(pid) -> text, or nil and why   /proc/PID/cgroup (default: the runtime's)
--   max_entries                         pids kept (default 4096, at least 2)
--   ttl_ns                              an answer is read again after this
--                                       long (default 10 minutes: pids are reused)
--   registry                            the agent's metrics API: counts
--                                       evictions and read failures
function _M.new(opts)
  opts = opts or {}
  local self = setmetatable({
    read = opts.read or runtime_reader,
    half = math.max(1, math.floor((opts.max_entries or 4096) / 2)),
    ttl_ns = opts.ttl_ns or 600e9,
    current = {}, n_current = 0,
    previous = {}, n_previous = 0,
    evictions = 0, read_errors = 0,
  }, Resolver)
  if opts.registry then
    self.evicted_metric = opts.registry.counter("moonrover_net_container_cache_evictions_total",
      "Processes whose container id was dropped from the full cache (read again when next seen)")
    self.errors_metric = opts.registry.counter("moonrover_net_container_id_errors_total",
      "Processes whose /proc/PID/cgroup could not be read (most had exited)")
  end
  return self
end

-- The cache keeps two generations of at most max_entries/2 pids each: a
-- lookup moves its pid into the current one; when the current one is full the
-- previous one, holding what was not looked up since, is dropped.
function Resolver:store(pid, entry)
  if self.n_current >= self.half then
    self.evictions = self.evictions + self.n_previous
    if self.evicted_metric and self.n_previous > 0 then
      self.evicted_metric:add(self.n_previous)
    end
    self.previous, self.n_previous = self.current, self.n_current
    self.current, self.n_current = {}, 0
  end
  self.current[pid] = entry
  self.n_current = self.n_current + 1
end

function Resolver:cached(pid)
  local entry = self.current[pid]
  if entry then
    return entry
  end
  entry = self.previous[pid]
  if entry then
    self.previous[pid] = nil
    self.n_previous = self.n_previous - 1
    self:store(pid, entry)
  end
  return entry
end

-- The container id of pid at now_ns (the events' monotonic clock): a string,
-- false when the process is not measured, or nil and why when its cgroup file
-- cannot be read (it exited).
function Resolver:lookup(pid, now_ns)
  local entry = self:cached(pid)
  if entry and now_ns - entry.at < self.ttl_ns then
    return entry.id
  end
  local text, err = self.read(pid)
  if not text then
    self.read_errors = self.read_errors + 1
    if self.errors_metric then
      self.errors_metric:inc()
    end
    return nil, err
  end
  local id = _M.from_cgroup(text)
  if entry then
    entry.id, entry.at = id, now_ns
  else
    self:store(pid, { id = id, at = now_ns })
  end
  return id
end

-- Forgets pid (it exited: its number may be reused).
function Resolver:forget(pid)
  if self.current[pid] then
    self.current[pid] = nil
    self.n_current = self.n_current - 1
  elseif self.previous[pid] then
    self.previous[pid] = nil
    self.n_previous = self.n_previous - 1
  end
end

-- { entries, evictions, read_errors }.
function Resolver:stats()
  return { entries = self.n_current + self.n_previous, evictions = self.evictions, read_errors = self.read_errors }
end

return _M
