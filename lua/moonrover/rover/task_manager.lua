-- task_manager.lua - the profiling-task policy of the Rover drop-in: which
-- tasks run, when they start and stop, and what each flush sends. Time, the
-- process lookup and the runners are injected, so every rule is testable
-- without a kernel or a clock. It avoids the defects of Rover's task manager
-- (pkg/profiling/task/manager.go in Rover 0.7): a task whose process is not
-- known yet waits and is
-- retried; a future start time is honoured; re-delivery only extends;
-- process-id order does not change identity; a replaced or finished task's
-- last data is flushed before it goes; data whose send failed is kept
-- (bounded) and sent again.
--
-- deps:
--   now()                        -> epoch milliseconds
--   resolve(process_id)          -> a process (any value) or nil when not known yet
--   new_runner(task, processes)  -> runner or nil, err; a runner has
--       :start() -> true or nil, err
--       :stop()                     stop sampling; its data stays readable
--       :collect() -> list of data messages (deltas since the last collect),
--                     and why when the data could not be read
--       :close()                    free everything
--   log(level, fmt, ...)         -- optional
--   on_failed(task, why)         -- optional: a task ended without running
--                                   (it could not start, or expired waiting)
local command = require("moonrover.rover.task_command")

local _M = {}
local mt = { __index = _M }

local MAX_PENDING = 20000 -- unsent messages kept across failed flushes

local function noop() end

function _M.new(deps)
  return setmetatable({
    deps = deps,
    log = deps.log or noop,
    contexts = {},       -- identity -> context
    retired = {},        -- replaced contexts whose last data is still to be collected
    latest_update = 0,   -- the latestUpdateTime of the next queryTasks
    pending = {},        -- { task = ctx.task, started = ms, messages = {...} } whose send failed
    carried = {},        -- messages handed over by the previous version (hot reload)
    started_before = {}, -- identity -> when the previous version started the task
    dropped = 0,         -- messages dropped because pending was full
  }, mt)
end

-- What the next version needs to go on where this one stops (a hot reload):
-- the start time of every running task and the data not yet sent. The
-- runners keep running, so a reload that is refused after this call loses
-- nothing but this data; when the reload goes through, closing this
-- version's state closes them, and the new version's runners take over when
-- OAP re-sends the tasks.
function _M:hand_over()
  local starts = {}
  for identity, ctx in pairs(self.contexts) do
    if ctx.started then
      starts[identity] = ctx.started
    end
  end
  local messages = self:flush()
  self.in_flight = nil
  self.pending = {}
  return { starts = starts, messages = messages }
end

-- Takes back what hand_over() gave away when the reload was refused: the
-- data goes out with the next flush.
function _M:take_back(state)
  for _, m in ipairs(state.messages or {}) do
    self.carried[#self.carried + 1] = m
  end
end

-- Takes what hand_over() returned in the previous version.
function _M:take_over(state)
  self.started_before = state.starts or {}
  self.carried = state.messages or {}
end

local function resolve_all(self, task)
  local processes = {}
  for i, id in ipairs(task.process_ids) do
    local p = self.deps.resolve(id)
    if p == nil then
      return nil, id
    end
    processes[i] = p
  end
  return processes
end

local function expired(task, now)
  return now >= task.start_time + task.duration_ms
end

-- Stops sampling; the context stays until its last data has been flushed.
local function retire(self, ctx, why)
  if ctx.runner and ctx.state == "running" then
    ctx.runner:stop()
  end
  self.log("info", "task %s (%s) %s", ctx.task.id, ctx.task.target, why)
  ctx.state = ctx.runner and "stopping" or "done"
end

local function replace(self, identity, task)
  local old = self.contexts[identity]
  if old then
    retire(self, old, "replaced by task " .. task.id)
    if old.runner then
      self.retired[#self.retired + 1] = old
    end
  end
  self.contexts[identity] = { task = task, state = "waiting" }
end

-- Takes one parsed task from a queryTasks answer.
local function accept(self, task, now)
  if task.update_time > self.latest_update then
    self.latest_update = task.update_time
  end
  if expired(task, now) then
    return
  end
  local identity = command.identity(task)
  local ctx = self.contexts[identity]
  if ctx and command.same(ctx.task, task) then
    if task.duration_ms ~= ctx.task.duration_ms then
      self.log("info", "task %s extended to %d s", task.id, task.duration_ms / 1000)
    end
    ctx.task = task
    return
  end
  replace(self, identity, task)
end

-- Takes a task the agent made itself (a continuous-profiling trigger's, with
-- origin = "continuous"): it runs as one of OAP's would, beside them.
function _M:add(task)
  accept(self, task, self.deps.now())
  self:tick()
end

-- Handles the commands of one queryTasks answer (a list of { command, args }).
-- Tasks whose processes are not known yet wait and are retried by tick();
-- latestUpdateTime still advances, because the manager keeps them itself.
function _M:on_commands(commands)
  local now = self.deps.now()
  for _, cmd in ipairs(commands or {}) do
    local task, err = command.parse(cmd)
    if task then
      accept(self, task, now)
    elseif cmd.command == command.COMMAND then
      self.log("warn", "ignored a task command: %s", err)
    end
  end
  self:tick()
end

local function failed(self, task, why)
  if self.deps.on_failed then
    self.deps.on_failed(task, why)
  end
end

local function start(self, ctx, now)
  local processes, missing = resolve_all(self, ctx.task)
  if not processes then
    if not ctx.waiting_logged then
      self.log("info", "task %s waits for process %s to be known", ctx.task.id, missing)
      ctx.waiting_logged = true
    end
    return
  end
  local runner, err = self.deps.new_runner(ctx.task, processes)
  local ok
  if runner then
    ok, err = runner:start()
  end
  if not ok then
    self.log("error", "task %s (%s) cannot start: %s", ctx.task.id, ctx.task.target, tostring(err))
    if runner then
      runner:close()
    end
    ctx.state = "done"
    failed(self, ctx.task, tostring(err))
    return
  end
  ctx.runner, ctx.state = runner, "running"
  ctx.started = self.started_before[command.identity(ctx.task)] or now
  self.log("info", "task %s (%s) started for %d s", ctx.task.id, ctx.task.target, ctx.task.duration_ms / 1000)
end

-- Starts tasks whose time has come (and whose processes are known), stops
-- those whose duration, counted from their actual start, is over.
function _M:tick()
  local now = self.deps.now()
  for identity, ctx in pairs(self.contexts) do
    if ctx.state == "waiting" then
      if expired(ctx.task, now) then
        self.contexts[identity] = nil
        failed(self, ctx.task, "it expired before its processes were known")
      elseif now >= ctx.task.start_time then
        start(self, ctx, now)
      end
    elseif ctx.state == "running" and now >= ctx.started + ctx.task.duration_ms then
      retire(self, ctx, "finished")
    end
    if ctx.state == "done" then
      self.contexts[identity] = nil
    end
  end
end

local function metadata(task, started, now)
  return { taskId = task.id, processId = task.process_ids[1], profilingStartTime = started, currentTime = now }
end

-- Appends one task's messages, the first carrying the task metadata.
local function append(out, task, started, messages, now)
  if #messages == 0 then
    return
  end
  messages[1].task = metadata(task, started, now)
  for _, m in ipairs(messages) do
    out[#out + 1] = m
  end
end

-- A stopping runner's collect is its last: it can be closed afterwards.
local function collect(ctx)
  if not ctx.runner then
    return {}
  end
  if ctx.state == "stopping" then
    ctx.final_collected = true
  end
  return ctx.runner:collect()
end

-- The messages of one collectProfilingData stream: what failed last time,
-- then each task's new deltas. Pass the result of the send to flushed().
function _M:flush()
  local now = self.deps.now()
  local out, batch = {}, {}
  for _, m in ipairs(self.carried) do
    out[#out + 1] = m
  end
  for _, p in ipairs(self.pending) do
    append(out, p.task, p.started, p.messages, now)
    batch[#batch + 1] = p
  end
  local function take(ctx)
    local messages, err = collect(ctx)
    if err then
      self.log("warn", "task %s: its data since the last flush could not be read: %s", ctx.task.id, err)
    end
    append(out, ctx.task, ctx.started, messages, now)
    batch[#batch + 1] = { task = ctx.task, started = ctx.started, messages = messages, ctx = ctx }
  end
  for _, ctx in pairs(self.contexts) do
    take(ctx)
  end
  for _, ctx in ipairs(self.retired) do
    take(ctx)
  end
  self.in_flight = batch
  return out
end

-- Closes the runners whose last data was collected by the flush just sent
-- (that data is now either delivered or kept in pending).
local function close_finished(self)
  local retired = {}
  for _, ctx in ipairs(self.retired) do
    if ctx.final_collected then
      ctx.runner:close()
    else
      retired[#retired + 1] = ctx
    end
  end
  self.retired = retired
  for identity, ctx in pairs(self.contexts) do
    if ctx.final_collected then
      ctx.runner:close()
      self.contexts[identity] = nil
    end
  end
end

local function keep_for_retry(self, batch)
  local pending, count = {}, 0
  for _, p in ipairs(batch) do
    if #p.messages > 0 then
      count = count + #p.messages
      pending[#pending + 1] = { task = p.task, started = p.started, messages = p.messages }
    end
  end
  while count > MAX_PENDING and #pending > 0 do
    count = count - #pending[1].messages
    self.dropped = self.dropped + #pending[1].messages
    table.remove(pending, 1)
  end
  self.pending = pending
end

-- After the stream of flush() was sent (ok = true) or failed (the messages
-- are then kept, bounded, and sent again by the next flush).
function _M:flushed(ok)
  local batch = self.in_flight or {}
  self.in_flight = nil
  if ok then
    self.pending = {}
    self.carried = {}
  else
    keep_for_retry(self, batch)
  end
  close_finished(self)
end

-- Stops every task (agent shutdown); a last flush() then sends their data.
function _M:stop_all()
  for _, ctx in pairs(self.contexts) do
    if ctx.state == "running" then
      retire(self, ctx, "stopped with the agent")
    elseif ctx.state == "waiting" then
      ctx.state = "done"
    end
  end
end

-- How many tasks are sampling now.
function _M:running()
  local n = 0
  for _, ctx in pairs(self.contexts) do
    n = n + (ctx.state == "running" and 1 or 0)
  end
  return n
end

-- For status pages and tests: identity -> state.
function _M:states()
  local out = {}
  for identity, ctx in pairs(self.contexts) do
    out[identity] = ctx.state
  end
  return out
end

return _M
