-- profile_result.lua - a profile as a script sees it (moonrover.profiles):
-- its totals, its hottest functions, its stacks, and writing it as folded
-- stacks, gzipped pprof or an SVG flame graph with the writers `moonrover
-- profile` uses.
local output_file = require("moonrover.output_file")
local output_format = require("moonrover.profiler.output_format")
local profile_view = require("moonrover.profiler.profile_view")
local summary = require("moonrover.profiler.summary")
local rt = require("moonrover.rt")

local _M = {}
local Result = {}
Result.__index = Result

-- Sums of the samples' count and nanos.
local function totals(prof)
  local lib = rt.lib
  local samples = lib.mr_profile_samples(prof)
  local count, nanos = 0, 0
  for i = 0, lib.mr_profile_sample_count(prof) - 1 do
    count = count + tonumber(samples[i].count)
    nanos = nanos + tonumber(samples[i].nanos)
  end
  return count, nanos
end

-- info: { profile (an mr_profile), off_cpu, frequency, pids, duration
-- (seconds), ended ("duration", "stopped", "exited", "collected") }.
function _M.new(info)
  local count, nanos = totals(info.profile)
  return setmetatable({
    profile = info.profile,
    off_cpu = info.off_cpu == true,
    frequency = info.frequency,
    pids = info.pids,
    duration = info.duration,
    ended = info.ended,
    samples = count,
    nanos = nanos,
    total = info.off_cpu and nanos or count,
    unit = info.off_cpu and "nanoseconds" or "samples",
  }, Result)
end

-- What the writers and the summary read about the profile.
function Result:meta()
  local what = self.off_cpu and "Off-CPU time" or "On-CPU samples"
  local scope = "pid " .. table.concat(self.pids, ",")
  return {
    title = string.format("moonrover: %s, %s", what, scope),
    scope = scope,
    subtitle = string.format("%.1f s%s", self.duration,
      self.off_cpu and "" or string.format(", %d Hz", self.frequency)),
    unit = self.unit,
    off_cpu = self.off_cpu,
    duration_ns = math.floor(self.duration * 1e9),
  }
end

-- Every stack as { comm, pid, frames (root .. leaf), kinds, count, nanos },
-- made once.
function Result:stack_list()
  if not self.list then
    self.list = profile_view.stacks(self.profile)
  end
  return self.list
end

-- An iterator over the stacks.
function Result:stacks()
  local list, i = self:stack_list(), 0
  return function()
    i = i + 1
    return list[i]
  end
end

-- The n (default 10) hottest functions by their own value (by = "self", the
-- default) or by the value of the stacks they are in (by = "total"): rows of
-- { name, value, share }, the hottest first.
function Result:top(n, by)
  if by ~= nil and by ~= "self" and by ~= "total" then
    return nil, "top(n, by): by must be \"self\" or \"total\", not " .. tostring(by)
  end
  local s = summary.compute(self:stack_list(), self:meta(), n or 10)
  return by == "total" and s.top_total or s.top_self
end

local function write_pprof(self, out, meta)
  local period_ns = self.off_cpu and 0 or math.floor(1e9 / self.frequency)
  return rt.call(rt.lib.mr_pprof_write, self.profile, out.handle, self.off_cpu and 1 or 0, period_ns,
    meta.duration_ns, output_format.pprof_main_file(self.pids))
end

-- Writes the profile to path as format ("folded", "pprof" or "svg"; default:
-- from the name's extension, .folded/.txt, .pb.gz/.pprof, .svg). The file
-- appears whole or not at all. true, or nil and why.
function Result:write(path, format)
  if type(path) ~= "string" or path == "" then
    return nil, "write(path, format): path must be a file name"
  end
  local err
  format, err = output_format.for_path(path, format)
  if not format then
    return nil, err .. ": name the format (\"folded\", \"pprof\" or \"svg\")"
  end
  local out
  out, err = output_file.open(path)
  if not out then
    return nil, err
  end
  local meta = self:meta()
  if format == "pprof" then
    local ok
    ok, err = write_pprof(self, out, meta)
    if not ok then
      out:abort()
      return nil, "cannot write " .. path .. ": " .. err
    end
  else
    require("moonrover.profiler.writers." .. format).write(self:stack_list(), meta, out)
  end
  return out:commit()
end

return _M
