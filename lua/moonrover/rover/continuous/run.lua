-- run.lua - continuous profiling in the Rover drop-in, on the public API
-- (moonrover.processes, windows, silence, net.http_series): asks OAP for the
-- policies of the reported services on Rover's schedule, samples the watched
-- processes every fetch_interval, sends the rover_con_p_* meters and fires
-- triggers every check_interval, reports each trigger to OAP and runs the
-- task OAP records through the task manager, beside OAP's own tasks.
--
-- A user module named continuous_policies (in the --scripts directory) may
-- add check types (`checkers(registry)`) and policies of its own
-- (`policies = { [service] = { ON_CPU = { TYPE = { Threshold, Period, Count } } } }`).
local checkers = require("moonrover.rover.continuous.checkers")
local config = require("moonrover.config")
local engine = require("moonrover.rover.continuous.engine")
local http_series = require("moonrover.net.http_series")
local messages = require("moonrover.rover.continuous.messages")
local policy = require("moonrover.rover.continuous.policy")
local processes = require("moonrover.processes")
local silence = require("moonrover.silence")
local task_command = require("moonrover.rover.task_command")
local windows = require("moonrover.windows")

local _M = {}
local mt = { __index = _M }

-- A dimension whose task OAP recorded but which could not run fires again
-- after this long at most (each report makes a task in OAP's list).
local RETRY_SECONDS = 60

local POLICY_COMMAND = "ContinuousProfilingPolicyQuery"
local REPORT_COMMAND = "ContinuousProfilingReportTask"

-- The profiling.continuous settings, typed, or nil and the first bad one.
function _M.settings(cfg)
  return config.read_fields(cfg, {
    { "meter_prefix", "profiling.continuous.meter_prefix", config.get_string },
    { "fetch_interval", "profiling.continuous.fetch_interval", config.get_duration },
    { "check_interval", "profiling.continuous.check_interval", config.get_duration },
    { "execute_duration", "profiling.continuous.trigger.execute_duration", config.get_duration },
    { "silence_duration", "profiling.continuous.trigger.silence_duration", config.get_duration },
  })
end

-- The user's continuous_policies module, or an empty one.
local function user_module(log)
  local ok, m = pcall(require, "continuous_policies")
  if not ok then
    if not tostring(m):find("module 'continuous_policies' not found", 1, true) then
      log("error", "continuous_policies.lua: %s", tostring(m))
    end
    return {}
  end
  return type(m) == "table" and m or {}
end

-- deps: agent, client (oap_client), reporter, tasks (task_manager), regex
-- (pattern -> matcher), now_ms, call(rpc, fn) -> the callback of a call
-- (drop_in's watched), settings (from settings()), state (hand_over() of
-- the previous version, or nil).
function _M.new(deps)
  local s = deps.settings
  local self = setmetatable({ deps = deps, agent = deps.agent, s = s, uuids = {}, raw = {}, oap = {}, local_ = {},
    dimensions = {}, continuous_tasks = {}, pids = {}, triggers = {},
    watched_pids = {}, -- pid -> the key (pid and start time) of the process watched
  }, mt)
  self.registry = checkers.new()
  self.log = function(level, fmt, ...) deps.agent.log[level](fmt, ...) end
  local quiet = math.max(s.silence_duration, s.execute_duration)
  local old = deps.state or {}
  self.silence = old.silence and silence.import(old.silence) or silence.new(quiet)
  self.engine = engine.new({ windows = windows, silence = self.silence, silence_seconds = quiet })
  self.engine:import(old.windows)
  self.sampler = assert(processes.sampler())
  self.series = assert(http_series.new())
  self:load_user_module()
  self:take_over(old)
  return self
end

-- Takes the check types and the local policies of the user's
-- continuous_policies module, problems logged.
function _M:load_user_module()
  local user = user_module(self.log)
  if type(user.checkers) == "function" then
    local ok, err = pcall(user.checkers, self.registry)
    if not ok then
      self.log("error", "continuous_policies.lua: checkers(registry): %s", tostring(err))
    end
  end
  for service, profiling in pairs(type(user.policies) == "table" and user.policies or {}) do
    self.local_[service] = self:read(service, profiling, "local")
  end
end

-- Policies of one service from a Profiling object, problems logged.
function _M:read(service, profiling, source)
  local problems = {}
  local list = policy.read_profiling(service, profiling, self.registry, self.deps.regex, problems)
  for _, p in ipairs(problems) do
    self.log("warn", "continuous profiling policy: %s (item left out)", p)
  end
  for _, p in ipairs(list) do
    p.source = source
  end
  return list
end

local function has_http(list)
  for _, p in ipairs(list) do
    for _, item in ipairs(p.items) do
      if item.checker.scope == "http" then
        return true
      end
    end
  end
  return false
end

-- Starts counting HTTP exchanges once a policy needs them (as Rover loads
-- its HTTP probes only then).
function _M:want_http()
  if self.http ~= nil then
    return
  end
  local ok, err = pcall(self.agent.on, "http", function(batch)
    local watched = self.watched_pids
    for _, ex in ipairs(batch.events) do
      if watched[ex.pid] then
        self.series:add(ex)
      end
    end
  end)
  self.http = ok
  if not ok then
    self.log("warn", "continuous profiling: HTTP checks get no data: %s", tostring(err))
  end
end

-- Hands the engine a service's policies, OAP's and the local ones together,
-- and starts reading HTTP exchanges when one of them checks HTTP.
function _M:apply(service)
  local list = {}
  for _, source in ipairs({ self.oap[service] or {}, self.local_[service] or {} }) do
    for _, p in ipairs(source) do
      list[#list + 1] = p
    end
  end
  if has_http(list) then
    self:want_http()
  end
  self.engine:set_policies(service, list)
end

-- Takes the commands of a queryPolicies answer.
function _M:on_policies(commands)
  for _, cmd in ipairs(commands or {}) do
    if cmd.command == POLICY_COMMAND then
      local json = task_command.args_by_key(cmd.args).ServiceWithPolicyJSON
      local services, problems = policy.parse(json, self.registry, self.deps.regex)
      for _, p in ipairs(problems) do
        self.log("warn", "continuous profiling policy: %s (item left out)", p)
      end
      for _, svc in ipairs(services or {}) do
        if self.uuids[svc.service] ~= svc.uuid then
          -- named as read() names them, so that windows keep their keys over a reload
          for _, p in ipairs(svc.policies) do
            p.source = "oap"
          end
          self.uuids[svc.service], self.raw[svc.service], self.oap[svc.service] = svc.uuid, svc.profiling, svc.policies
          self.log("info", "continuous profiling: service %s: %d task types with policies (UUID %q)", svc.service,
            #svc.policies, svc.uuid)
          self:apply(svc.service)
        end
      end
    end
  end
end

-- The reported processes as the engine wants them.
function _M:reported()
  local out = {}
  for _, r in ipairs(self.deps.reporter:reported()) do
    local p, e = r.process, r.process.entity
    out[#out + 1] = { key = string.format("%d:%.0f", p.pid, p.start_ns or 0), pid = p.pid, id = r.id,
      service = e.serviceName, instance = e.instanceName, name = e.processName, layer = e.layer, labels = e.labels }
  end
  return out
end

-- queryPolicies for every service with a reported process, with the UUID last seen.
function _M:query()
  local seen, list = {}, {}
  for _, p in ipairs(self:reported()) do
    if not seen[p.service] then
      seen[p.service] = true
      list[#list + 1] = { service = p.service, uuid = self.uuids[p.service] }
    end
  end
  if #list == 0 then
    return
  end
  self.deps.client:query_policies(messages.policy_query(list), self.deps.call("queryPolicies", function(response)
    if response then
      self:on_policies(response.commands)
    end
  end))
end

-- Watches the reported processes of the services that have policies. The
-- HTTP series keeps seconds by pid: a pid now another process's (a restart)
-- starts afresh there too.
function _M:refresh()
  local with, pids, watched = {}, {}, {}
  for _, p in ipairs(self:reported()) do
    if self.engine:has_policies(p.service) then
      with[#with + 1] = p
      pids[#pids + 1] = p.pid
      watched[p.pid] = p.key
      if self.watched_pids[p.pid] and self.watched_pids[p.pid] ~= p.key then
        self.series:forget(p.pid)
      end
    end
  end
  self.pids, self.watched_pids = pids, watched
  self.engine:set_processes(with)
end

-- Samples the watched processes (every fetch_interval) into the engine's
-- windows; nothing while no policy is in effect.
function _M:sample()
  if self.engine:idle() then
    return
  end
  if #self.pids == 0 then
    self:refresh()
  end
  local samples, err = self.sampler:sample(self.pids)
  if not samples then
    self.log("warn", "continuous profiling: cannot sample processes: %s", err)
  end
  self.engine:sample(self.agent.now(), samples or {}, processes.system(), self.series)
end

-- Counts a trigger reported to OAP, by task type, on /metrics.
function _M:count_trigger(target)
  local c = self.triggers[target]
  if not c then
    c = self.agent.counter("moonrover_rover_continuous_triggers_total", "Continuous-profiling policies that "
      .. "fired and were reported to OAP, by task type", { target = target })
    self.triggers[target] = c
  end
  c:inc()
end

local function task_id(response)
  for _, cmd in ipairs(response and response.commands or {}) do
    if cmd.command == REPORT_COMMAND then
      return task_command.args_by_key(cmd.args).TaskId
    end
  end
  return nil
end

-- The task a trigger's report got from OAP, to run as OAP's own are run.
function _M:task_of(trigger, id)
  local ids = {}
  for i, p in ipairs(trigger.target == "NETWORK" and trigger.processes or { trigger.main }) do
    ids[i] = p.id
  end
  table.sort(ids)
  return { id = id, process_ids = ids, update_time = 0, start_time = self.deps.now_ms(),
    duration_ms = math.floor(self.s.execute_duration * 1000), trigger = "CONTINUOUS_PROFILING",
    target = trigger.target, origin = "continuous",
    extension_json = trigger.target == "NETWORK" and messages.network_extension(trigger.all_causes) or nil }
end

function _M:report(trigger)
  local report = messages.report(trigger, math.floor(self.s.execute_duration))
  self.deps.client:report_profiling_task(report, self.deps.call("reportProfilingTask", function(response)
    local id = task_id(response)
    if not id then
      self.log("warn", "continuous profiling: %s for %s not started: OAP gave no task", trigger.target,
        trigger.dimension)
      self.engine:clear(trigger.dimension)
      return
    end
    self:count_trigger(trigger.target)
    local task = self:task_of(trigger, id)
    self.dimensions[id], self.continuous_tasks[id] = trigger.dimension, task
    self.log("info", "continuous profiling: %s task %s for %s (%d causes)", trigger.target, id, trigger.dimension,
      #trigger.causes)
    self.deps.tasks:add(task)
  end))
end

-- Forgets the continuous tasks whose time is over.
function _M:prune()
  local now = self.deps.now_ms()
  for id, t in pairs(self.continuous_tasks) do
    if now >= t.start_time + t.duration_ms then
      self.dimensions[id], self.continuous_tasks[id] = nil, nil
    end
  end
end

-- Judges every item (every check_interval): sends the meters and reports
-- the triggers.
function _M:check()
  self:prune()
  self:refresh()
  local meters, triggers = self.engine:check(self.agent.now())
  if #meters > 0 then
    self.deps.client:collect_meter_batch(messages.meter_collections(meters, self.s.meter_prefix,
      self.deps.now_ms()), self.deps.call("collectMeterBatch"))
  end
  for _, t in ipairs(triggers) do
    self:report(t)
  end
end

-- A task that never ran: its dimension may fire again, after RETRY_SECONDS
-- (or the silence, when shorter).
function _M:task_failed(task)
  local dim = self.dimensions[task.id]
  if dim then
    self.engine:clear(dim, math.min(RETRY_SECONDS, self.s.silence_duration))
    self.dimensions[task.id], self.continuous_tasks[task.id] = nil, nil
  end
end

-- Arms the timers: policies every profiling.check_interval (and soon after
-- start), samples every fetch_interval, checks every check_interval.
function _M:start(check_policies_every)
  local agent = self.agent
  agent.every(check_policies_every, function() self:query() end)
  agent.after(1, function() self:query() end)
  agent.every(self.s.fetch_interval, function() self:sample() end)
  agent.every(self.s.check_interval, function() self:check() end)
end

-- What the next version needs: the policies and their UUIDs, the windows,
-- the silences and the continuous tasks (OAP never sends those again).
function _M:hand_over()
  self:prune()
  local tasks = {}
  for id, t in pairs(self.continuous_tasks) do
    tasks[#tasks + 1] = { task = t, dimension = self.dimensions[id] }
  end
  return { uuids = self.uuids, raw = self.raw, windows = self.engine:export(), silence = self.silence:export(),
    tasks = tasks }
end

-- Takes what hand_over() of the previous version gave: policies, UUIDs and
-- the continuous tasks, handed to the task manager again.
function _M:take_over(state)
  for service, uuid in pairs(state.uuids or {}) do
    self.uuids[service] = uuid
    self.raw[service] = state.raw and state.raw[service]
    self.oap[service] = self:read(service, self.raw[service], "oap")
  end
  for service in pairs(self.uuids) do
    self:apply(service)
  end
  for service in pairs(self.local_) do
    self:apply(service)
  end
  for _, entry in ipairs(state.tasks or {}) do
    local t = entry.task
    self.dimensions[t.id], self.continuous_tasks[t.id] = entry.dimension, t
    self.deps.tasks:add(t)
  end
end

return _M
