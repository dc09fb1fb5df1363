-- process_finder.lua - host-mode process discovery (the "scanner" finder of
-- Rover 0.3-0.5, whose regex rules match a process's command line): lists
-- the host's processes, names the ones a rule (or the user's namer) selects
-- as OAP entities, and computes the properties OAP stores for them. Pure
-- policy: every fact comes from the injected sys table.
--
-- sys (all functions required; new() says which one is missing):
--   sys.list_pids()        -> array of pids, or nil and why
--   sys.read(pid, file)    -> text or nil; file is "cmdline" (NULs turned into
--                             spaces), "comm", "cgroup" or "stat"
--   sys.exe(pid)           -> path of the executable or nil
--   sys.cwd(pid)           -> working directory or nil
--   sys.start_ns(pid)      -> start time in ns since boot, 0 when unknown
--   sys.has_symbols(pid)   -> true/false, nil when it could not be told
--   sys.regex(pattern)     -> matcher or nil, err; matcher:match(s) -> nil or
--                             array of captures (the full match first)
--   sys.host_ip()          -> string;  sys.hostname() -> string
--   sys.self_pid()         -> the agent's own pid (never reported)
--   sys.host_ipv4(ifname)  -> optional: that interface's IPv4 address or nil
-- A nil from read or exe means the process went away (or cannot be read): it
-- is skipped silently, and found again by a later scan if alive. A nil from
-- cwd only leaves the work dir empty.
--
-- cfg:
--   rules = { { match_cmd = "regex", service_name = tpl, layer = "OS_LINUX",
--               instance_name = tpl, process_name = tpl, labels = "a,b" }, ... }
--     match_cmd and service_name are required; layer defaults to OS_LINUX,
--     instance_name to {{.Rover.HostIPV4 "en0"}}, process_name to
--     {{.Process.ExeName}}, labels to none (templates: host_template.lua).
--   instance_id = the agent's UUID;  cluster_name = "" or a cluster name
--   namer = optional function(ctx) -> entity, nil or false: an entity
--     { layer, serviceName, instanceName, processName, labels = {...} } names
--     the process, false leaves it out, nil lets the rules decide.
--
-- ctx (given to templates and to the namer; read-only):
--   ctx.process.pid, .exe_path, .exe_name, .command_line, .work_dir ("" when unknown)
--   ctx.container.id ("" on the host), .runtime ("docker", "containerd", "cri-o" or nil)
--   ctx.rover.instance_id, .host_ip, .host_name
--
-- A scanned process: { pid, start_ns, exe, command_line, container_id (or nil),
--   entity = { layer, serviceName, instanceName, processName, labels (sorted) },
--   properties = { host_ip, pid, command_line, support_ebpf_profiling ("true"
--   or "false"), container_id (when in a container) } } (all values strings).
local container_id = require("moonrover.rover.container_id")
local host_template = require("moonrover.rover.host_template")
local profilable = require("moonrover.rover.profilable")

local _M = {}
local mt = { __index = _M }

local SYS_FUNCTIONS = {
  "list_pids", "read", "exe", "cwd", "start_ns", "has_symbols", "regex", "host_ip", "hostname",
  "self_pid",
}

local DEFAULTS = {
  layer = "OS_LINUX",
  instance_name = '{{.Rover.HostIPV4 "en0"}}',
  process_name = "{{.Process.ExeName}}",
}

local TEMPLATES = { "service_name", "instance_name", "process_name" }

-- A sorted array of distinct labels.
local function label_set(labels)
  local seen, out = {}, {}
  for _, label in ipairs(labels) do
    if not seen[label] then
      seen[label] = true
      out[#out + 1] = label
    end
  end
  table.sort(out)
  return out
end

-- One string for an entity, labels compared as a set.
function _M.entity_key(entity)
  local labels = table.concat(label_set(entity.labels or {}), "\0")
  return table.concat({ entity.layer, entity.serviceName, entity.instanceName, entity.processName,
    labels }, "\1")
end

-- Rover's labels of a rule or analyzer: the comma-separated words of text,
-- trimmed, empty ones dropped, in their order.
function _M.split_labels(text)
  local labels = {}
  for item in (text or ""):gmatch("[^,]+") do
    local label = item:match("^%s*(.-)%s*$")
    if label ~= "" then
      labels[#labels + 1] = label
    end
  end
  return labels
end

local function compile_rule(rule, i, sys)
  local function fail(field, err)
    return nil, string.format("process_discovery rule %d: %s: %s", i, field, err)
  end
  if type(rule.match_cmd) ~= "string" or rule.match_cmd == "" then
    return fail("match_cmd", "missing")
  end
  local matcher, err = sys.regex(rule.match_cmd)
  if not matcher then
    return fail("match_cmd", err or "bad regular expression")
  end
  local layer = rule.layer or DEFAULTS.layer
  if type(layer) ~= "string" or layer == "" then
    return fail("layer", "missing")
  end
  local compiled = { index = i, matcher = matcher, layer = layer, labels = label_set(_M.split_labels(rule.labels)) }
  for _, field in ipairs(TEMPLATES) do
    local tpl, terr = host_template.compile(rule[field] or DEFAULTS[field])
    if not tpl then
      return fail(field, terr)
    end
    compiled[field] = tpl
  end
  return compiled
end

local function check_sys(sys)
  if type(sys) ~= "table" then
    return "sys: not a table"
  end
  for _, name in ipairs(SYS_FUNCTIONS) do
    if type(sys[name]) ~= "function" then
      return "sys." .. name .. ": missing"
    end
  end
  return nil
end

-- A finder for cfg over sys, or nil, err naming the rule and field at fault.
function _M.new(cfg, sys)
  local err = check_sys(sys)
  if err then
    return nil, err
  end
  if cfg.namer ~= nil and type(cfg.namer) ~= "function" then
    return nil, "process_discovery namer: not a function"
  end
  local rules = {}
  for i, rule in ipairs(cfg.rules or {}) do
    rules[i], err = compile_rule(rule, i, sys)
    if not rules[i] then
      return nil, err
    end
  end
  return setmetatable({
    sys = sys,
    rules = rules,
    namer = cfg.namer,
    instance_id = cfg.instance_id or "",
    cluster_name = cfg.cluster_name or "",
    owners = {},   -- entity key -> "pid/start_ns" of the process that held it last scan
    profilable = profilable.new(sys.has_symbols),
  }, mt), nil
end

local function basename(path)
  return path:match("([^/]*)$")
end

-- The command line of pid, or nil for kernel threads and vanished processes.
local function command_line(sys, pid)
  local cmdline = sys.read(pid, "cmdline")
  cmdline = cmdline and cmdline:match("^%s*(.-)%s*$")
  if cmdline == "" then
    return nil
  end
  return cmdline
end

-- The ctx of pid, or nil when it vanished while being read.
local function read_context(sys, pid, cmdline, rover)
  local exe, cgroup = sys.exe(pid), sys.read(pid, "cgroup")
  if not (exe and cgroup) then
    return nil
  end
  exe = exe:gsub(" %(deleted%)$", "") -- keeps the name across package upgrades
  local id, runtime = container_id.from_cgroup(cgroup)
  return {
    process = { pid = pid, exe_path = exe, exe_name = basename(exe), command_line = cmdline,
      work_dir = sys.cwd(pid) or "" },
    container = { id = id or "", runtime = runtime },
    rover = rover,
  }
end

local function matching_rule(self, cmdline)
  for _, rule in ipairs(self.rules) do
    if rule.matcher:match(cmdline) then
      return rule
    end
  end
  return nil
end

-- The entity a rule gives, or nil and the problem naming the template that failed.
local function rule_entity(rule, ctx)
  local names = {}
  for _, field in ipairs(TEMPLATES) do
    local text, err = rule[field]:render(ctx)
    if not text then
      return nil, string.format("pid %d: process_discovery rule %d: %s: %s", ctx.process.pid, rule.index, field, err)
    end
    names[field] = text
  end
  return {
    layer = rule.layer,
    serviceName = names.service_name,
    instanceName = names.instance_name,
    processName = names.process_name,
    labels = { unpack(rule.labels) },
  }
end

-- An entity the namer returned, checked and copied; or nil, err.
local function checked_entity(e)
  if type(e) ~= "table" then
    return nil, "not a table"
  end
  for _, field in ipairs({ "layer", "serviceName", "instanceName", "processName" }) do
    if type(e[field]) ~= "string" then
      return nil, field .. " is not a string"
    end
  end
  local labels = e.labels or {}
  for _, label in ipairs(labels) do
    if type(label) ~= "string" then
      return nil, "labels: not all strings"
    end
  end
  return { layer = e.layer, serviceName = e.serviceName, instanceName = e.instanceName,
    processName = e.processName, labels = label_set(labels) }
end

-- The entity of a process (rule: the first rule matching it, or nil), or nil
-- when it is not reported, with a problem to log.
local function name_process(self, ctx, rule)
  if self.namer then
    local ok, e = pcall(self.namer, ctx)
    if not ok then
      return nil, string.format("namer failed for pid %d: %s", ctx.process.pid, tostring(e))
    end
    if e == false then
      return nil
    end
    if e ~= nil then
      local entity, err = checked_entity(e)
      if not entity then
        return nil, string.format("namer returned a bad entity for pid %d: %s", ctx.process.pid, err)
      end
      return entity
    end
  end
  if rule then
    return rule_entity(rule, ctx)
  end
  return nil
end

-- Drops entities with empty names; prefixes the cluster name to the service
-- name ("<cluster>::<service>") unless it has one already, as Rover does.
local function finish_entity(self, entity)
  if entity.serviceName == "" or entity.instanceName == "" or entity.processName == "" then
    return nil
  end
  if self.cluster_name ~= "" and not entity.serviceName:find("::", 1, true) then
    entity.serviceName = self.cluster_name .. "::" .. entity.serviceName
  end
  return entity
end

local function build(self, c)
  local p, rover = c.ctx.process, c.ctx.rover
  local cid = c.ctx.container.id ~= "" and c.ctx.container.id or nil
  return {
    pid = p.pid,
    start_ns = c.start_ns,
    exe = p.exe_path,
    command_line = p.command_line,
    container_id = cid,
    entity = c.entity,
    properties = {
      host_ip = rover.host_ip,
      pid = string.format("%d", p.pid),
      command_line = p.command_line,
      support_ebpf_profiling = self.profilable:check(p.pid, c.ident, p.exe_path),
      container_id = cid,
    },
  }
end

-- The ctx and entity of pid when it is to be reported, and any problem.
local function consider(self, pid, rover)
  local cmdline = command_line(self.sys, pid)
  local rule = cmdline and matching_rule(self, cmdline)
  if not (rule or (cmdline and self.namer)) then
    return nil
  end
  local ctx = read_context(self.sys, pid, cmdline, rover)
  if not ctx then
    return nil
  end
  local entity, problem = name_process(self, ctx, rule)
  return ctx, entity and finish_entity(self, entity), problem
end

-- Named candidates, one per entity: the process that held it in the last scan
-- keeps it, otherwise the first one listed (as Rover did).
local function candidates(self, problems)
  local sys = self.sys
  local rover = { instance_id = self.instance_id, host_ip = sys.host_ip(), host_name = sys.hostname(),
    ipv4 = sys.host_ipv4 }
  local self_pid, chosen, order = sys.self_pid(), {}, {}
  local pids, err = sys.list_pids()
  if not pids then
    problems[#problems + 1] = err
  end
  for _, pid in ipairs(pids or {}) do
    local ctx, entity, problem
    if pid ~= self_pid then
      ctx, entity, problem = consider(self, pid, rover)
    end
    problems[#problems + 1] = problem
    if entity then
      local key = _M.entity_key(entity)
      local c = { ctx = ctx, entity = entity, start_ns = sys.start_ns(pid) }
      c.ident = string.format("%d/%.0f", pid, c.start_ns)
      if not chosen[key] then
        order[#order + 1] = key
      end
      if not chosen[key] or self.owners[key] == c.ident then
        chosen[key] = c
      end
    end
  end
  return chosen, order
end

-- The processes to report now, and a list of problems (namer errors) to log.
function _M:scan()
  local problems = {}
  local chosen, order = candidates(self, problems)
  local result, owners = {}, {}
  for _, key in ipairs(order) do
    local c = chosen[key]
    owners[key] = c.ident
    result[#result + 1] = build(self, c)
  end
  self.owners = owners
  self.profilable:scanned()
  return result, problems
end

return _M
