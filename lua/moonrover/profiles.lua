-- profiles.lua - profiles from a script (require("moonrover.profiles")):
-- start an on-CPU or off-CPU profile of some pids for a duration without
-- blocking, and get it as a result object (profiler/profile_result.lua).
-- Profiles that want the same sampling share one BPF profiler
-- (profiler/profile_group.lua); limits (profiler/profile_limits.lua) say
-- how many run at once and how fast they sample.
--
-- Inside `moonrover agent` the module drives itself with an agent timer
-- (every TICK_S while a profile runs): it drains each profiler every
-- DRAIN_S, ends profiles whose duration is over or whose processes all
-- exited, and calls their on_done. Elsewhere (the command line, specs) the
-- caller calls profiles.tick() from its own loop; h:done() and h:collect()
-- also move things on. State is per Lua state: each agent script has its
-- own profiles, profilers and limits.
local list = require("moonrover.lib.list")
local pid_list = require("moonrover.pid_list")
local profile_group = require("moonrover.profiler.profile_group")
local profile_limits = require("moonrover.profiler.profile_limits")
local profile_options = require("moonrover.profiler.profile_options")
local profile_result = require("moonrover.profiler.profile_result")
local profiler = require("moonrover.profiler.profiler")
local rt = require("moonrover.rt")

local _M = {}
local Handle = {}
Handle.__index = Handle

local TICK_S = 0.1
local DRAIN_S = 2

local groups = {}  -- sharing key -> profile_group
local running = {} -- handles, in start order
local counts = { started = 0, refused = 0, failed = 0, finished = 0 }
local limits = assert(profile_limits.apply(profile_limits.DEFAULTS))
local timer
local next_id = 0

local now = require("moonrover.lib.clock").monotonic_s

local function total_frequency()
  local sum = 0
  for _, g in pairs(groups) do
    if not g.off_cpu then
      sum = sum + g.frequency
    end
  end
  return sum
end

local function in_agent()
  return package.loaded["moonrover.script_context"] ~= nil
end

local function arm()
  if not timer and in_agent() then
    timer = require("moonrover.agent").every(TICK_S, _M.tick)
  end
end

local function disarm()
  if timer and #running == 0 then
    timer.cancel()
    timer = nil
  end
end

-- Copies scratch's samples of this profile's pids into what it keeps.
function Handle:take(scratch)
  local lib = rt.lib
  for _, prof in ipairs({ self.whole, self.since }) do
    local ok, err = rt.call(lib.mr_profile_copy, prof, scratch, self.pid_array, #self.pids)
    if not ok then
      return nil, err
    end
  end
  return true
end

local function new_handle(o)
  local whole, err = profiler.new_profile()
  local since
  if whole then
    since, err = profiler.new_profile()
  end
  if not since then
    return nil, err
  end
  next_id = next_id + 1
  local array = rt.ffi.new("int32_t[?]", #o.pids)
  for i, pid in ipairs(o.pids) do
    array[i - 1] = pid
  end
  local h = setmetatable({ id = next_id, pids = o.pids, pid_array = array, off_cpu = o.off_cpu,
    frequency = o.frequency, kernel = o.kernel, duration = o.duration, on_done = o.on_done,
    whole = whole, since = since, state = "running" }, Handle)
  return h
end

-- Ends h: its last samples, out of its group, its result made.
local function finish(h, ended, err)
  local g = h.group
  local ok, leave_err = g:leave(h)
  if g:empty() then
    groups[g.key] = nil
  end
  list.remove(running, h)
  local t = now()
  h.state, h.ended_at = "done", t
  h.err = err or (not ok and leave_err) or nil
  h.final = profile_result.new({ profile = h.whole, off_cpu = h.off_cpu, frequency = h.frequency, pids = h.pids,
    duration = math.min(t - h.started, h.duration or math.huge), ended = ended })
  counts.finished = counts.finished + 1
  disarm()
  return h
end

-- Calls the on_done of each finished handle; an error one raises is raised
-- again once every callback has run.
local function notify(finished)
  local first_err
  for _, h in ipairs(finished) do
    if h.on_done then
      local ok, err = pcall(h.on_done, h.final, h.err)
      if not ok and not first_err then
        first_err = err
      end
    end
  end
  if first_err then
    error(first_err, 0)
  end
end

-- Starts a profile; the handle, or nil and why (bad options, a limit, a
-- pid that names no process, or the kernel refused).
function _M.start(opts)
  local o, err = profile_options.check(opts)
  if not o then
    counts.failed = counts.failed + 1
    return nil, err
  end
  local ok
  ok, err = pid_list.check(o.pids)
  if not ok then
    counts.failed = counts.failed + 1
    return nil, err
  end
  local key = profile_group.key(o)
  local g = groups[key]
  ok, err = profile_limits.check(limits, { profiles = #running, total_frequency = total_frequency(),
    shared = g ~= nil }, o)
  if not ok then
    counts.refused = counts.refused + 1
    return nil, err
  end
  local h
  h, err = new_handle(o)
  if h and g then
    ok, err = g:join(h)
  elseif h then
    g, err = profile_group.open(o, h)
    ok = g ~= nil
  end
  if not h or not ok then
    counts.failed = counts.failed + 1
    return nil, err
  end
  groups[key] = g
  local t = now()
  g.next_drain = g.next_drain or t + DRAIN_S
  h.group, h.started, h.since_started = g, t, t
  h.ends_at = o.duration and t + o.duration
  running[#running + 1] = h
  counts.started = counts.started + 1
  arm()
  return h
end

local function all_gone(members)
  local gone = {}
  for _, h in ipairs(members) do
    if pid_list.all_gone(h.pids) then
      gone[#gone + 1] = h
    end
  end
  return gone
end

-- Drains the groups whose time has come; returns the handles to end, each
-- with why ({ h, ended, err }).
local function drain_due(t)
  local ends = {}
  for _, g in pairs(groups) do
    if t >= g.next_drain then
      g.next_drain = t + DRAIN_S
      local ok, err = g:drain()
      local members = ok and all_gone(g.members) or g.members
      for _, h in ipairs(members) do
        ends[#ends + 1] = { h, ok and "exited" or "failed", err }
      end
    else
      g:poll()
    end
  end
  return ends
end

-- Moves every profile on: handles the kernel's notices, drains what is due,
-- ends the profiles whose time is over or whose processes all exited, and
-- calls their on_done. The agent's timer calls it; elsewhere, call it from
-- your loop (every 0.1 to 1 s).
function _M.tick()
  local t = now()
  local ends = drain_due(t)
  for _, h in ipairs(running) do
    if h.ends_at and t >= h.ends_at then
      ends[#ends + 1] = { h, "duration" }
    end
  end
  local finished = {}
  for _, e in ipairs(ends) do
    if e[1].state == "running" then
      finished[#finished + 1] = finish(e[1], e[2], e[3])
    end
  end
  notify(finished)
end

-- Ends the profile now; its result (on_done is called too).
function Handle:stop()
  if self.state == "running" then
    notify({ finish(self, "stopped") })
  end
  return self.final
end

-- Whether the profile has ended (it moves profiles on first).
function Handle:done()
  if self.state == "running" then
    _M.tick()
  end
  return self.state == "done"
end

-- The whole profile once it has ended (and the error that ended it, if
-- one did); before: nil and why.
function Handle:result()
  if self.state ~= "done" then
    return nil, "the profile is still running"
  end
  return self.final, self.err
end

-- What was counted since the last collect (since the start, the first time)
-- as a result; after the end, what was left once, then empty results. Or nil
-- and why.
function Handle:collect()
  if self.state == "running" then
    local ok, err = self.group:drain()
    if not ok then
      return nil, err
    end
  end
  local fresh, err = profiler.new_profile()
  if not fresh then
    return nil, err
  end
  local t = self.state == "done" and math.min(self.ended_at, self.started + (self.duration or math.huge)) or now()
  local r = profile_result.new({ profile = self.since, off_cpu = self.off_cpu, frequency = self.frequency,
    pids = self.pids, duration = math.max(t - self.since_started, 0), ended = "collected" })
  self.since, self.since_started = fresh, t
  return r
end

-- Changes limits ({ max_profiles, max_frequency, max_total_frequency }, any
-- of them); returns the limits in force, or nil and why.
function _M.limits(changes)
  local new, err = profile_limits.apply(limits, changes)
  if not new then
    return nil, err
  end
  limits = new
  return profile_limits.apply(limits)
end

-- What runs and what happened: { running, profilers, total_frequency,
-- started, refused, failed, finished, limits }.
function _M.stats()
  local profilers = 0
  for _ in pairs(groups) do
    profilers = profilers + 1
  end
  return {
    running = #running,
    profilers = profilers,
    total_frequency = total_frequency(),
    started = counts.started,
    refused = counts.refused,
    failed = counts.failed,
    finished = counts.finished,
    limits = profile_limits.apply(limits),
  }
end

return _M
