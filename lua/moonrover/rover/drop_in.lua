-- drop_in.lua - the SkyWalking Rover drop-in, run by the bundled script
-- lua/scripts/rover.lua inside `moonrover agent` when the --config file has a
-- `core` section: it reports processes (host-mode naming rules), polls OAP
-- for profiling tasks, runs ON_CPU / OFF_CPU tasks on moonrover's profiler and
-- streams their data back, NETWORK tasks on the network tracer
-- (rover/network_task/), whose meters and sampled traces go out every
-- report_interval, and OAP's continuous-profiling policies
-- (rover/continuous/). Processes are found by the host-mode rules
-- (rover/process_finder.lua) and, when process_discovery.kubernetes is
-- active, in this node's pods (rover/kube_discovery.lua), both at once when
-- both are set; one report holds them all. Every piece of policy is its own
-- module; this one wires them to the agent's timers and carries state
-- across hot reloads.
local config = require("moonrover.config")
local config_schema = require("moonrover.config_schema")
local continuous = require("moonrover.rover.continuous.run")
local cpu_runner = require("moonrover.rover.cpu_runner")
local kube_discovery = require("moonrover.rover.kube_discovery")
local kube_finder = require("moonrover.rover.kube_finder")
local network_tasks = require("moonrover.rover.network_task.tasks")
local oap_client = require("moonrover.rover.oap_client")
local process_finder = require("moonrover.rover.process_finder")
local process_reporter = require("moonrover.rover.process_reporter")
local profiles = require("moonrover.profiles")
local rt = require("moonrover.rt")
local status = require("moonrover.rover.status")
local sys = require("moonrover.rover.finder_facts")
local task_manager = require("moonrover.rover.task_manager")

local _M = {}

local POLL_SECONDS = 0.1
-- Draining and symbolizing a task's stacks (parsing a large binary's symbols
-- the first time) is bounded work that can exceed the agent's default budget.
local BUDGET_MS = 10000
local TICK_SECONDS = 1
-- OAP hands out a task once per process of a service, and each runs as one
-- profile (those of a task share one BPF profiler): a script's default of 64
-- profiles would refuse the processes of a large service.
local MAX_TASK_PROFILES = 4096

local function new_uuid()
  local buf = rt.ffi.new("char[37]")
  assert(rt.call(rt.lib.mr_sys_random_uuid, buf, 37))
  return rt.ffi.string(buf)
end

-- The settings this module uses, typed, or nil and the first bad one (the
-- agent checks the whole file before it starts, so a bad one is a bug).
-- The scanner's regex rules name processes unless its mode is AGENT_SENSOR,
-- which Rover runs without them and moonrover does not implement.
function _M.settings(cfg)
  local s, err = config.read_fields(cfg, {
    { "heartbeat", "process_discovery.heartbeat_period", config.get_duration },
    { "properties_every", "process_discovery.properties_report_period", config.get_int },
    { "check_interval", "profiling.check_interval", config.get_duration },
    { "flush_interval", "profiling.flush_interval", config.get_duration },
    { "dump_period", "profiling.task.on_cpu.dump_period", config.get_duration },
    { "report_interval", "profiling.task.network.report_interval", config.get_duration },
    { "meter_prefix", "profiling.task.network.meter_prefix", config.get_string },
    { "profiling", "profiling.active", config.get_bool },
    { "cluster_name", "core.cluster_name", config.get_string },
  })
  if not s then
    return nil, err
  end
  s.mode = config_schema.scanner_mode(config.get(cfg, "process_discovery.scanner"))
  s.rules = s.mode == "REGEX" and config.get(cfg, "process_discovery.scanner.regex") or {}
  -- As the agent's Kubernetes client (kube/agent_client.lua): the defaults
  -- alone do not turn it on, the file's process_discovery section does.
  s.kube = config.has_section(cfg, "process_discovery")
    and config.get_bool(cfg, "process_discovery.kubernetes.active") == true
  s.analyzers = kube_finder.analyzers(config.get(cfg, "process_discovery.kubernetes.analyzers"))
  return s
end

-- A user module named process_naming (in the --scripts directory) with a
-- name(ctx) function names processes before the configured rules do.
local function user_namer()
  local ok, naming = pcall(require, "process_naming")
  if ok and type(naming) == "table" and type(naming.name) == "function" then
    return naming.name
  end
  return nil
end

-- What names processes, for the line saying how many were matched.
local function naming_text(s, namer, kube)
  local rules = #s.rules == 1 and "1 rule" or string.format("%d rules", #s.rules)
  local text = s.mode == "AGENT_SENSOR"
    and "process_discovery.scanner.mode is AGENT_SENSOR, which moonrover does not implement"
    or rules .. " in process_discovery.scanner.regex"
  text = text .. (namer and " and a process_naming.lua" or ", no process_naming.lua in the scripts directory")
  return kube and kube:naming_text() .. "; " .. text or text
end

local function finder_config(s, agent_id)
  local rules = {}
  for i, r in ipairs(s.rules) do
    rules[i] = { match_cmd = r.match_cmd, layer = r.layer, service_name = r.service_name,
      instance_name = r.instance_name, process_name = r.process_name, labels = r.labels }
  end
  return { rules = rules, instance_id = agent_id, cluster_name = s.cluster_name or "", namer = user_namer() }
end

local function runner_factory(s, reporter, agent, net)
  local frequency = math.max(1, math.floor(1 / math.max(s.dump_period, 0.001)))
  return function(task, processes)
    local pids = {}
    for i, p in ipairs(processes) do
      pids[i] = p.pid
    end
    if task.target == "NETWORK" then
      return net:runner(task, processes)
    end
    -- OAP sends a task once per process, all with the task's id: one series each.
    local labels = { task = task.id, process = table.concat(task.process_ids, ",") }
    local taken = agent.gauge("moonrover_rover_task_samples", "Samples (or context switches) the kernel "
      .. "counted for a profiling task's process so far", labels)
    return cpu_runner.new(task, pids, { frequency = frequency, on_samples = function(n) taken:set(n) end })
  end, function(id)
    return reporter:process_by_id(id)
  end
end

local RPC_TYPES = {
  reportProcesses = { oap_client.REPORT_PROCESSES, "skywalking.v3.EBPFProcessReportList",
    "skywalking.v3.EBPFReportProcessDownstream" },
  keepAlive = { oap_client.KEEP_ALIVE, "skywalking.v3.EBPFProcessPingPkgList", "skywalking.v3.Commands" },
}

-- The metrics the module keeps about itself (docs/rover-compatibility.md).
local function new_metrics(agent)
  return {
    connected = agent.gauge("moonrover_oap_connected", "1 while OAP answers the Rover module's calls; 0 once "
      .. "a call found it unreachable, and before the first answer"),
    matched = agent.gauge("moonrover_rover_processes_matched", "Processes the naming rules matched at the last scan"),
    reported = agent.gauge("moonrover_rover_processes_reported", "Processes reported to OAP that OAP gave an id"),
    tasks = agent.gauge("moonrover_rover_tasks_running", "Profiling tasks sampling now"),
    failed = {}, -- rpc/code -> { counter, last }
  }
end

local function publish(st)
  local m = st.metrics
  local known, reported = st.reporter:counts()
  m.connected:set(st.status.reachable and 1 or 0)
  m.matched:set(known)
  m.reported:set(reported)
  m.tasks:set(st.tasks:running())
end

local function count_failure(st, agent, rpc, code)
  code = code or "NOT_SENT"
  local key = rpc .. "/" .. code
  local f = st.metrics.failed[key]
  if not f then
    local labels = { rpc = rpc, code = code }
    f = {
      counter = agent.counter("moonrover_oap_errors_total", "Calls to OAP that failed, by rpc and gRPC status "
        .. "(NOT_SENT: the call could not be made)", labels),
      last = agent.gauge("moonrover_oap_last_error_timestamp_seconds", "When a call to OAP last failed, by rpc "
        .. "and gRPC status (Unix time): the newest series is the last error", labels),
    }
    st.metrics.failed[key] = f
  end
  f.counter:inc()
  f.last:set(sys.now_ms() / 1000)
end

-- Wraps a call's callback: the status and the metrics hear of every outcome.
local function watched(st, agent, rpc, fn)
  return function(response, why, code)
    if response then
      st.status:answered(rpc)
    else
      st.status:failed(rpc, code, why)
      count_failure(st, agent, rpc, code)
    end
    if fn then
      fn(response)
    end
    publish(st)
  end
end

local function on_reported(st, response, call)
  if response then
    st.reporter:on_report_response(response)
    st.tasks:tick()
  else
    st.reporter:on_report_failed(call)
  end
end

local function send(st, agent, call)
  local types = RPC_TYPES[call.rpc]
  local done = call.rpc == "reportProcesses" and function(response) on_reported(st, response, call) end or nil
  st.client:unary(types[1], types[2], call.message, types[3], watched(st, agent, call.rpc, done))
end

-- The host finder's processes of the last heartbeat and the pods' of the last scan.
local function all_processes(st)
  local all = { unpack(st.host_processes) }
  for _, p in ipairs(st.kube and st.kube:processes() or {}) do
    all[#all + 1] = p
  end
  return all
end

-- The pod processes changed between heartbeats: new ones are reported now.
local function kube_changed(st, agent)
  st.reporter:update(all_processes(st))
  local call = st.reporter:new_call()
  if call then
    send(st, agent, call)
  end
  publish(st)
end

local function report(st, agent)
  local processes, problems = st.finder:scan()
  for _, p in ipairs(problems or {}) do
    agent.log.warn("process naming: %s", p)
  end
  st.host_processes = processes
  local all = all_processes(st)
  st.status:scanned(#all, st.naming)
  st.reporter:update(all)
  for _, call in ipairs(st.reporter:next_calls()) do
    send(st, agent, call)
  end
  publish(st)
end

local function query_tasks(st, agent)
  st.client:unary(oap_client.QUERY_TASKS, "skywalking.v3.EBPFProfilingTaskQuery",
    { roverInstanceId = st.agent_id, latestUpdateTime = st.tasks.latest_update },
    "skywalking.v3.Commands", watched(st, agent, "queryTasks", function(response)
      if response then
        st.tasks:on_commands(response.commands or {})
      end
    end))
end

local function flush(st, agent)
  if st.flushing then
    return
  end
  local messages = st.tasks:flush()
  if #messages == 0 then
    st.tasks:flushed(true)
    return
  end
  st.flushing = true
  st.client:stream(oap_client.COLLECT_PROFILING_DATA, "skywalking.v3.EBPFProfilingData", messages,
    "skywalking.v3.Commands", watched(st, agent, "collectProfilingData", function(response)
      st.flushing = false
      st.tasks:flushed(response ~= nil)
    end))
end

local function start_timers(st, agent, s)
  agent.every(POLL_SECONDS, function() st.client:poll() end)
  agent.every(s.heartbeat, function() report(st, agent) end)
  agent.after(0.5, function() report(st, agent) end)
  if s.profiling ~= false then
    agent.every(s.check_interval, function() query_tasks(st, agent) end)
    agent.after(1, function() query_tasks(st, agent) end)
    agent.every(s.flush_interval, function() flush(st, agent) end)
    agent.every(s.report_interval, function() st.net:send() end)
  end
  agent.every(TICK_SECONDS, function()
    st.tasks:tick()
    publish(st)
  end)
end

-- Continuous profiling (rover/continuous/run.lua), with the profiling tasks.
local function start_continuous(st, agent, s, cfg, state)
  local settings = assert(continuous.settings(cfg))
  st.continuous = continuous.new({ agent = agent, client = st.client, reporter = st.reporter, tasks = st.tasks,
    regex = sys.regex, now_ms = sys.now_ms, settings = settings, state = state,
    call = function(rpc, fn) return watched(st, agent, rpc, fn) end })
  st.continuous:start(s.check_interval)
end

-- /healthz says "degraded: OAP unreachable since ..." while it is.
local function show_reachability(address)
  return function(reachable, since_ms)
    if reachable then
      rt.lib.mr_agent_health_restore()
    else
      rt.call(rt.lib.mr_agent_health_degrade, "OAP unreachable", since_ms, address)
    end
  end
end

-- Runs the module in the calling script; returns false when the
-- configuration does not ask for it.
function _M.run(agent)
  agent.set_budget(BUDGET_MS)
  assert(profiles.limits({ max_profiles = MAX_TASK_PROFILES }))
  local cfg = agent.config()
  if not config.has_section(cfg, "core") then
    return false
  end
  local s, err = _M.settings(cfg)
  if not s then
    error(err, 0)
  end
  local old = agent.imported() or {}
  local st = { agent_id = old.agent_id or new_uuid() }
  local finder_cfg = finder_config(s, st.agent_id)
  local finder
  finder, err = process_finder.new(finder_cfg, sys)
  if not finder then
    error(err, 0)
  end
  local kube
  if s.kube then
    kube, err = kube_discovery.new({ analyzers = s.analyzers, instance_id = st.agent_id,
      cluster_name = s.cluster_name or "" }, sys)
    if not kube then
      error(err, 0)
    end
  end
  if agent.canary then
    return true
  end
  if not old.agent_id then
    for _, notice in ipairs(config.notices(cfg)) do
      agent.log.info("config: %s", notice)
    end
  end
  st.finder, st.host_processes = finder, {}
  st.client, err = oap_client.open(cfg)
  if not st.client then
    error("cannot set up the connection to OAP: " .. err, 0)
  end
  st.status = status.new({ now = sys.now_ms, address = st.client.address, state = old.status,
    log = function(level, fmt, ...) agent.log[level](fmt, ...) end,
    on_reachability = show_reachability(st.client.address) })
  st.metrics = new_metrics(agent)
  st.reporter, err = process_reporter.new({ heartbeat_every = s.properties_every, agent_id = st.agent_id })
  if not st.reporter then
    error(err, 0)
  end
  st.net = network_tasks.new(agent, s.meter_prefix, { regex = sys.regex, now_ms = sys.now_ms,
    call = function(path, rpc, request_type, messages)
      st.client:stream(path, request_type, messages, "skywalking.v3.Commands", watched(st, agent, rpc))
    end })
  local new_runner, resolve = runner_factory(s, st.reporter, agent, st.net)
  st.tasks = task_manager.new({ now = sys.now_ms, resolve = resolve, new_runner = new_runner,
    log = function(level, fmt, ...) agent.log[level](fmt, ...) end,
    on_failed = function(task) return st.continuous and st.continuous:task_failed(task) end })
  -- After a reload the tasks are asked for again from the start (OAP re-sends
  -- them) and resume with their original start times and unsent data.
  st.tasks:take_over(old.tasks or {})
  -- NETWORK tasks' counts and samples not sent yet go over too.
  st.net:take_over(old.net or {})
  agent.export(function()
    return { agent_id = st.agent_id, tasks = st.tasks:hand_over(), status = st.status:hand_over(),
      continuous = st.continuous and st.continuous:hand_over(), net = st.net:hand_over() }
  end, function(state)
    st.tasks:take_back(state.tasks or {})
    st.net:take_over(state.net or {})
  end)
  if kube then
    local ok, why = kube:start(agent, function() kube_changed(st, agent) end)
    if ok then
      st.kube = kube
    else
      agent.log.warn("process_discovery.kubernetes is active but %s: only host processes are discovered", why)
    end
  end
  st.naming = naming_text(s, finder_cfg.namer, st.kube)
  start_timers(st, agent, s)
  if s.profiling ~= false then
    start_continuous(st, agent, s, cfg, old.continuous)
  end
  agent.on_stop(function()
    st.tasks:stop_all()
    flush(st, agent)
    st.net:send()
  end)
  agent.log.info("reporting to OAP at %s as agent %s", st.client.address, st.agent_id)
  return true
end

return _M
