-- kube_finder.lua - Kubernetes process discovery of the Rover drop-in (Rover's
-- only finder since 0.6): each live process whose cgroup names a container
-- of a pod the pod index knows is named by every active analyzer whose
-- filters all pass (kube_template.lua), as Rover's Kubernetes finder does.
-- Pure policy: facts come from the injected sys table, pods from the index.
--
-- sys: as process_finder.lua documents (list_pids, read, exe, cwd, start_ns,
--   has_symbols, host_ip, hostname, self_pid), and optionally
--   sys.host_ipv4(ifname), sys.host_ipv6(ifname) -> an address or nil, for
--   .Rover.HostIPV4 and .Rover.HostIPV6.
-- index: kube/pods.lua's (container(id) -> pod, status; service_name(pod);
--   owners(pod) -> list or nil, "pending").
-- cfg:
--   analyzers = { { active = true, filters = { 'eq .Container.Name "x"' }, layer = "MESH",
--                   service_name = tpl, instance_name = tpl, process_name = tpl,
--                   labels = "a,b" }, ... }
--   instance_id = the agent's UUID;  cluster_name = "" or a cluster name
--
-- finder:scan() gives every matching process, finder:scan(pids) only those
-- of pids; both return a list of processes as process_finder.lua's (one per
-- entity: a process may have several), the problems to log, and the pids
-- worth another look soon: in a container the index does not know (yet), or
-- waiting for an owner. Each process has
-- kind = "kubernetes" and Rover's properties: host_ip, container_ip,
-- container_name, pod_name, pid, command_line, support_ebpf_profiling.
-- A process whose names need an owner still being fetched is left out and
-- tried again at the next scan; finder.matched and finder.pending count the
-- pod processes named and waiting at the last full scan, finder.pending_pids
-- lists the latter.
local config_values = require("moonrover.config_values")
local container_id = require("moonrover.rover.container_id")
local kube_template = require("moonrover.rover.kube_template")
local split_labels = require("moonrover.rover.process_finder").split_labels
local profilable = require("moonrover.rover.profilable")

local _M = {}
local mt = { __index = _M }

local NAMES = { "service_name", "instance_name", "process_name" }

local function nonempty(v)
  return type(v) == "string" and v ~= ""
end

local function compile_analyzer(a, i)
  local function fail(field, err)
    return nil, string.format("process_discovery.kubernetes.analyzers[%d]: %s: %s", i, field, err)
  end
  if type(a) ~= "table" then
    return fail("analyzer", "not a mapping")
  end
  local out = { index = i, active = a.active == true, layer = a.layer, labels = split_labels(a.labels),
    filters = {} }
  if not nonempty(a.layer) then
    return fail("layer", "missing")
  end
  for j, text in ipairs(a.filters or {}) do
    if not nonempty(text) then
      return fail(string.format("filters[%d]", j), "empty")
    end
    local tpl, err = kube_template.compile(text, "filter", string.format("filters[%d]", j))
    if not tpl then
      return fail(string.format("filters[%d] %q", j, text), err)
    end
    out.filters[j] = { text = text, tpl = tpl }
  end
  for _, field in ipairs(NAMES) do
    if not nonempty(a[field]) then
      return fail(field, "missing")
    end
    local tpl, err = kube_template.compile(a[field], "name", field)
    if not tpl then
      return fail(string.format("%s %q", field, a[field]), err)
    end
    out[field] = { text = a[field], tpl = tpl }
  end
  return out
end

-- The analyzers of process_discovery.kubernetes.analyzers as the file has
-- them (text values) as cfg.analyzers takes them. An analyzer without
-- `active: true` is off, as in Rover.
function _M.analyzers(list)
  local out = {}
  for i = 1, table.maxn(list or {}) do
    local a = list[i]
    if type(a) == "table" then
      local filters = {}
      for j = 1, table.maxn(a.filters or {}) do
        filters[j] = a.filters[j]
      end
      out[i] = { active = config_values.bool(tostring(a.active or "false")) == true, filters = filters,
        layer = a.layer, service_name = a.service_name, instance_name = a.instance_name,
        process_name = a.process_name, labels = a.labels }
    else
      out[i] = a
    end
  end
  return out
end

-- A finder, or nil and an error naming the analyzer and field at fault.
function _M.new(cfg, sys, index)
  local analyzers = {}
  for i, a in ipairs(cfg.analyzers or {}) do
    local compiled, err = compile_analyzer(a, i)
    if not compiled then
      return nil, err
    end
    analyzers[#analyzers + 1] = compiled
  end
  return setmetatable({
    sys = sys,
    index = index,
    analyzers = analyzers,
    instance_id = cfg.instance_id or "",
    cluster_name = cfg.cluster_name or "",
    profilable = profilable.new(sys.has_symbols),
    told = {}, -- problems returned at the last scan, not repeated while they last
    matched = 0,
    pending = 0,
    pending_pids = {},
  }, mt), nil
end

local function basename(path)
  return path:match("([^/]*)$")
end

-- Rover's process name (gopsutil's): the kernel's name of the process, or,
-- when that is cut at 15 characters, the command's first word (its file
-- name when that starts with the kernel's).
local function process_name(comm, cmdline)
  local first = cmdline:match("^%S+")
  if #comm < 15 or not first then
    return comm
  end
  local name = basename(first)
  return name:sub(1, #comm) == comm and name or first
end

-- The ctx of pid in a container the index knows, or nil (and true when
-- the process is in a container the index does not know).
local function read_context(self, pid, rover)
  local sys = self.sys
  local cgroup = sys.read(pid, "cgroup")
  local id = cgroup and container_id.from_cgroup(cgroup)
  if not id then
    return nil
  end
  local pod, status = self.index:container(id)
  if not pod then
    return nil, true
  end
  local spec = kube_template.spec_of(pod, status.name)
  if not spec then
    return nil
  end
  local cmdline, comm, exe = sys.read(pid, "cmdline"), sys.read(pid, "comm"), sys.exe(pid)
  if not (cmdline and comm and exe) then
    return nil
  end
  cmdline = cmdline:match("^%s*(.-)%s*$")
  exe = exe:gsub(" %(deleted%)$", "")
  return {
    process = { pid = pid, exe_path = exe, exe_name = process_name(comm:match("^(.-)%s*$"), cmdline),
      command_line = cmdline, work_dir = sys.cwd(pid) or "" },
    rover = rover, pod = pod, status = status, spec = spec, index = self.index, container_id = id,
  }
end

local function where(ctx)
  local meta = ctx.pod.metadata or {}
  return string.format("pid %d (pod %s/%s, container %s)", ctx.process.pid, meta.namespace or "?",
    meta.name or "?", ctx.spec.name or "?")
end

-- Whether every filter of the analyzer passes, or nil and the problem.
local function passes(a, ctx)
  for _, f in ipairs(a.filters) do
    local yes, err = f.tpl:test(ctx)
    if yes == nil then
      return nil, string.format("analyzer %d: filter %q: %s", a.index, f.text, err)
    end
    if not yes then
      return false
    end
  end
  return true
end

local function entity(self, a, ctx)
  local names = {}
  for _, field in ipairs(NAMES) do
    local text, err = a[field].tpl:render(ctx)
    if not text then
      return nil, string.format("analyzer %d: %s %q: %s", a.index, field, a[field].text, err)
    end
    names[field] = text
  end
  local service = names.service_name
  if self.cluster_name ~= "" and not service:find("::", 1, true) then
    service = self.cluster_name .. "::" .. service
  end
  return { layer = a.layer, serviceName = service, instanceName = names.instance_name,
    processName = names.process_name, labels = { unpack(a.labels) } }
end

-- The entities of ctx, or nil and the problem (nil, nil while an owner is pending).
local function entities(self, ctx)
  local out = {}
  for _, a in ipairs(self.analyzers) do
    if a.active then
      local yes, err = passes(a, ctx)
      local e
      if yes then
        e, err = entity(self, a, ctx)
      end
      if err then
        if ctx.pending then
          return nil
        end
        return nil, where(ctx) .. ": " .. err
      end
      out[#out + 1] = e
    end
  end
  return out
end

local function record(self, ctx, e, start_ns)
  local p = ctx.process
  local ident = string.format("%d/%.0f", p.pid, start_ns)
  return {
    kind = "kubernetes",
    pid = p.pid,
    start_ns = start_ns,
    exe = p.exe_path,
    command_line = p.command_line,
    container_id = ctx.container_id,
    entity = e,
    properties = {
      host_ip = ctx.rover.host_ip,
      container_ip = ctx.pod.status and ctx.pod.status.podIP or "",
      container_name = ctx.spec.name or "",
      pod_name = ctx.pod.metadata and ctx.pod.metadata.name or "",
      pid = string.format("%d", p.pid),
      command_line = p.command_line,
      support_ebpf_profiling = self.profilable:check(p.pid, ident, p.exe_path),
    },
  }
end

-- The processes of pids (every live one when nil), the problems not told
-- before, and the pids to look at again.
function _M:scan(pids)
  local sys, problems, told = self.sys, {}, {}
  local full = pids == nil
  if full then
    local err
    pids, err = sys.list_pids()
    problems[#problems + 1] = err
  end
  local rover = { instance_id = self.instance_id, host_ip = sys.host_ip(), host_name = sys.hostname(),
    ipv4 = sys.host_ipv4, ipv6 = sys.host_ipv6 }
  local self_pid, result, waiting, matched, pending = sys.self_pid(), {}, {}, 0, {}
  for _, pid in ipairs(pids or {}) do
    local ctx, unknown
    if pid ~= self_pid then
      ctx, unknown = read_context(self, pid, rover)
    end
    if unknown then
      waiting[#waiting + 1] = pid
    elseif ctx then
      local list, problem = entities(self, ctx)
      if list then
        matched = matched + 1
        local start_ns = sys.start_ns(pid)
        for _, e in ipairs(list) do
          result[#result + 1] = record(self, ctx, e, start_ns)
        end
      elseif problem then
        told[problem] = true
        if not self.told[problem] then
          problems[#problems + 1] = problem
        end
      else
        pending[#pending + 1] = pid
        waiting[#waiting + 1] = pid
      end
    end
  end
  if full then
    self.told, self.matched, self.pending, self.pending_pids = told, matched, #pending, pending
    self.profilable:scanned()
  else
    for problem in pairs(told) do
      self.told[problem] = true
    end
  end
  return result, problems, waiting
end

return _M
