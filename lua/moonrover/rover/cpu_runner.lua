-- cpu_runner.lua - runs an ON_CPU or OFF_CPU profiling task for the Rover
-- drop-in as a profile of moonrover.profiles (tasks of the same kind share
-- one BPF profiler), and turns what each collect() gets into
-- EBPFProfilingData messages as OAP expects them: kernel and user stacks as
-- separate metadata, symbols leaf first, "[MISSING]" for what has no symbol,
-- counts as deltas since the previous collect.
local C = require("moonrover.consts")
local profile_view = require("moonrover.profiler.profile_view")
local profiles = require("moonrover.profiles")
local rt = require("moonrover.rt")

local _M = {}
local mt = { __index = _M }

local KERNEL_SPACE, USER_SPACE = 0, 1 -- EBPFProfilingStackType
local FRAME_KERNEL = C.MR_FRAME_KERNEL
local MISSING = "[MISSING]"

-- task: from task_command.parse; pids: the local pids of its processes;
-- opts.frequency: on-CPU samples per second (Rover: 1000 / dump_period ms);
-- opts.on_samples(total): told, at each collect, how many samples (or
-- switches) were counted for the task so far.
function _M.new(task, pids, opts)
  if task.target ~= "ON_CPU" and task.target ~= "OFF_CPU" then
    return nil, "target " .. tostring(task.target) .. " is not a CPU profile"
  end
  return setmetatable({
    task = task,
    pids = pids,
    off_cpu = task.target == "OFF_CPU",
    frequency = opts and opts.frequency or 111,
    on_samples = opts and opts.on_samples,
    stack_ids = {}, -- symbols text -> stable id for this task
    next_id = 0,
    taken = 0,
  }, mt)
end

-- Starts the task's profile (until stopped: the task manager keeps time).
function _M:start()
  local h, err = profiles.start({ pids = self.pids, frequency = self.frequency, off_cpu = self.off_cpu,
    kernel = true })
  if not h then
    return nil, err
  end
  self.h = h
  return true
end

-- Ends the profile; what it counted until now is left for collect().
function _M:stop()
  if self.h then
    self.h:stop()
  end
end

function _M:close()
  self:stop()
  self.h = nil
end

local function stack_id(self, kind, symbols)
  local key = kind .. "\0" .. table.concat(symbols, "\0")
  local id = self.stack_ids[key]
  if not id then
    self.next_id = self.next_id + 1
    id = self.next_id
    self.stack_ids[key] = id
  end
  return id
end

-- Splits a sample's frames (leaf first) into kernel and user symbols.
local function split(view, sample)
  local kernel, user = {}, {}
  for j = 0, sample.depth - 1 do
    local f = view.frames[view.stack[sample.first + j]]
    local name = f.resolved == 1 and view.name(f.name) or MISSING
    if f.kind == FRAME_KERNEL then
      kernel[#kernel + 1] = name
    else
      user[#user + 1] = name
    end
  end
  return kernel, user
end

local function metadata(self, kernel, user)
  local stacks = {}
  if #kernel > 0 then
    stacks[#stacks + 1] = { stackType = KERNEL_SPACE, stackId = stack_id(self, KERNEL_SPACE, kernel),
      stackSymbols = kernel }
  end
  if #user > 0 then
    stacks[#stacks + 1] = { stackType = USER_SPACE, stackId = stack_id(self, USER_SPACE, user),
      stackSymbols = user }
  end
  return stacks
end

local function message(self, stacks, sample)
  if self.off_cpu then
    return { offCPU = { stacks = stacks, switchCount = tonumber(sample.count), duration = tonumber(sample.nanos) } }
  end
  return { onCPU = { stacks = stacks, dumpCount = tonumber(sample.count) } }
end

local function view_of(prof)
  local lib = rt.lib
  return {
    frames = lib.mr_profile_frames(prof),
    stack = lib.mr_profile_stack_frames(prof),
    name = profile_view.names(prof),
  }
end

-- The data messages (without task metadata) counted since the last collect.
function _M:collect()
  if not self.h then
    return {}
  end
  local lib = rt.lib
  local got, err = self.h:collect()
  if not got then
    return {}, err
  end
  self.taken = self.taken + got.samples
  if self.on_samples then
    self.on_samples(self.taken)
  end
  local prof = got.profile
  local view, out = view_of(prof), {}
  local samples = lib.mr_profile_samples(prof)
  for i = 0, lib.mr_profile_sample_count(prof) - 1 do
    local stacks = metadata(self, split(view, samples[i]))
    if #stacks > 0 then
      out[#out + 1] = message(self, stacks, samples[i])
    end
  end
  return out
end

return _M
