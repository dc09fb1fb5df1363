-- profile_group.lua - one BPF profiler shared by the profiles that want the
-- same kind of sampling (on- or off-CPU, frequency, kernel frames). The
-- profiler samples the union of their pids; each drain goes into a scratch
-- profile whose samples are copied to every member that asked for their pid
-- (mr_profile_copy). A member joins and leaves at a drain, so it gets what
-- was counted while it was a member and nothing else.
local list = require("moonrover.lib.list")
local profiler = require("moonrover.profiler.profiler")

local _M = {}
local Group = {}
Group.__index = Group

-- Drains past the first when stacks were put off (a drain parses a bounded
-- number of new files): enough for a member that leaves to get its stacks.
local MAX_EXTRA_DRAINS = 8

-- The key of the profiles that can share a profiler.
function _M.key(opts)
  if opts.off_cpu then
    return "off-cpu" .. (opts.kernel and "+kernel" or "")
  end
  return string.format("on-cpu@%d%s", opts.frequency, opts.kernel and "+kernel" or "")
end

-- opts: { frequency, off_cpu, kernel }; member: { pids, take(scratch) }.
-- The group, sampling member's pids, or nil and why.
function _M.open(opts, member)
  local p, err = profiler.open({ frequency = opts.frequency, off_cpu = opts.off_cpu, kernel = opts.kernel,
    pids = member.pids })
  if not p then
    return nil, err
  end
  local ok
  ok, err = p:start()
  if not ok then
    p:close()
    return nil, err
  end
  local self = setmetatable({ key = _M.key(opts), p = p, frequency = opts.frequency, off_cpu = opts.off_cpu,
    members = { member }, refs = {} }, Group)
  for _, pid in ipairs(member.pids) do
    self.refs[pid] = (self.refs[pid] or 0) + 1
  end
  return self
end

-- Handles the kernel's notices of new processes (their mappings are read
-- while they live).
function Group:poll()
  return self.p:poll(0)
end

-- Moves what was counted into the members; true, or nil and why.
function Group:drain()
  local scratch, err = profiler.new_profile()
  if not scratch then
    return nil, err
  end
  self.p:poll(0)
  local ok
  ok, err = self.p:drain(scratch)
  if not ok then
    return nil, err
  end
  for _, m in ipairs(self.members) do
    ok, err = m:take(scratch)
    if not ok then
      return nil, err
    end
  end
  return true
end

-- Drains until no stack is put off any more (or MAX_EXTRA_DRAINS more).
function Group:drain_all()
  local ok, err = self:drain()
  for _ = 1, MAX_EXTRA_DRAINS do
    if not ok or self.p:stats().deferred == 0 then
      break
    end
    local before = self.p:stats().deferred
    ok, err = self:drain()
    if ok and self.p:stats().deferred == before then
      break
    end
  end
  return ok, err
end

-- Adds member (its pids) from the next drain on; true, or nil and why.
function Group:join(member)
  local ok, err = self:drain()
  if not ok then
    return nil, err
  end
  local added = {}
  for _, pid in ipairs(member.pids) do
    if not self.refs[pid] then
      ok, err = self.p:target(pid, true)
      if not ok then
        for _, back in ipairs(added) do
          self.p:target(back, false)
          self.refs[back] = nil
        end
        return nil, err
      end
      added[#added + 1] = pid
      self.refs[pid] = 0
    end
    self.refs[pid] = self.refs[pid] + 1
  end
  self.members[#self.members + 1] = member
  return true
end

-- Whether anyone is left.
function Group:empty()
  return #self.members == 0
end

-- Gives member what was counted up to now and takes it out; the last member
-- out stops and closes the profiler (its last drain takes everything).
-- true, or nil and why (member is out either way).
function Group:leave(member)
  local ok, err
  if #self.members == 1 then
    self.p:stop()
    ok, err = self:drain()
  else
    ok, err = self:drain_all()
  end
  list.remove(self.members, member)
  for _, pid in ipairs(member.pids) do
    self.refs[pid] = self.refs[pid] - 1
    if self.refs[pid] == 0 then
      self.refs[pid] = nil
      if #self.members > 0 then
        -- a pid left in the set costs samples no member takes, nothing else
        self.p:target(pid, false)
      end
    end
  end
  if #self.members == 0 then
    self.p:close()
  end
  return ok, err
end

-- The profiler's counters (samples, losses, processes: profiler.lua).
function Group:stats()
  return self.p:stats()
end

return _M
