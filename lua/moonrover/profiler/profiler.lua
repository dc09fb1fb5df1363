-- profiler.lua - a Lua object over the runtime's on-CPU / off-CPU profiler
-- (mr_profiler_* in runtime/api.h): open, start, poll, drain, stop, stats.
-- Every failure comes back as nil and a one-line message.
local rt = require("moonrover.rt")

local _M = {}
local mt = { __index = _M }

-- How user stacks are walked unless told: "cfi" or "fp".
_M.DEFAULT_UNWIND = "cfi"

-- The counters of stats() that count lost samples, each with its reason.
_M.LOST = {
  { field = "lost_user_stack", reason = "user stack unreadable" },
  { field = "lost_stack_full", reason = "stack storage full" },
  { field = "lost_stack_nomem", reason = "no kernel memory for a stack" },
  { field = "lost_counts_full", reason = "count map full" },
  { field = "lost_counts_nomem", reason = "no kernel memory for a count" },
  { field = "lost_offcpu_start", reason = "blocked-thread map full" },
  { field = "lost_notify", reason = "process notices dropped (names may be missing)" },
}

-- An empty profile (freed by the garbage collector), or nil and why.
function _M.new_profile()
  local lib = rt.lib
  local prof, err = rt.call(lib.mr_profile_new)
  if not prof then
    return nil, err
  end
  return rt.ffi.gc(prof, lib.mr_profile_free)
end

-- opts: { frequency = 99, off_cpu = false, kernel = true, pids = {..} or nil,
--         duration_ns = nil (nothing counted past it; nil: until stopped),
--         unwind = "cfi" (unwind tables, frame pointers where none) or "fp",
--         per_thread = false (true: samples of each thread apart, with its id and name),
--         unwind_table_bytes = nil (bound on the tables' kernel memory; nil: the runtime's default) }
function _M.open(opts)
  local lib, ffi = rt.lib, rt.ffi
  local o = ffi.new("struct mr_profiler_opts")
  o.frequency = opts.frequency or 99
  o.off_cpu = opts.off_cpu and 1 or 0
  o.kernel = opts.kernel and 1 or 0
  o.duration_ns = opts.duration_ns or 0
  o.unwind = (opts.unwind or _M.DEFAULT_UNWIND) == "fp" and lib.MR_UNWIND_MODE_FP or lib.MR_UNWIND_MODE_CFI
  o.unwind_table_bytes = opts.unwind_table_bytes or 0
  o.per_thread = opts.per_thread and 1 or 0
  local pids = opts.pids or {}
  local pid_array = ffi.new("int32_t[?]", math.max(#pids, 1))
  for i, pid in ipairs(pids) do
    pid_array[i - 1] = pid
  end
  o.pids = #pids > 0 and pid_array or nil
  o.npids = #pids
  local p, err = rt.call(lib.mr_profiler_open, o)
  if not p then
    return nil, err
  end
  local self = setmetatable({}, mt)
  self.handle = ffi.gc(p, lib.mr_profiler_close)
  self.profile, err = _M.new_profile()
  if not self.profile then
    self:close()
    return nil, err
  end
  self.period_ns = opts.off_cpu and 0 or math.floor(1e9 / o.frequency)
  return self
end

function _M:start()
  local ok, err = rt.call(rt.lib.mr_profiler_start, self.handle)
  if not ok then
    return nil, err
  end
  return true
end

-- Waits up to ms for kernel notices (new processes) and handles them;
-- returns how many, or nil and why.
function _M:poll(ms)
  return rt.call(rt.lib.mr_profiler_poll, self.handle, ms)
end

-- Moves what the kernel counted so far into `into` (default self.profile);
-- true, or nil and why.
function _M:drain(into)
  local ok, err = rt.call(rt.lib.mr_profiler_drain, self.handle, into or self.profile)
  if not ok then
    return nil, err
  end
  return true
end

-- Adds pid to (add true) or removes it from the processes a profiler opened
-- with pids samples; true, or nil and why.
function _M:target(pid, add)
  local ok, err = rt.call(rt.lib.mr_profiler_target, self.handle, pid, add and 1 or 0)
  if not ok then
    return nil, err
  end
  return true
end

function _M:stop()
  rt.lib.mr_profiler_stop(self.handle)
end

-- The kernel and runtime counters as a Lua table of numbers.
function _M:stats()
  local s = rt.ffi.new("struct mr_profiler_stats")
  rt.lib.mr_profiler_stats(self.handle, s)
  local out = {}
  for _, k in ipairs({ "samples", "idle_samples", "lost_user_stack", "lost_stack_full", "lost_stack_nomem",
    "lost_counts_full", "lost_counts_nomem", "lost_notify", "lost_offcpu_start", "processes", "stacks",
    "truncated_stacks", "first_sample_ns", "start_ns", "tracked", "deferred", "unwind_cfi_stacks",
    "unwind_fp_stacks", "unwind_fp_frames", "unwind_truncated" }) do
    out[k] = tonumber(s[k])
  end
  local u = self:unwind_stats()
  -- the mode in use: fp when the kernel refused the CFI walker
  out.unwind = { mode = s.unwind_mode == rt.lib.MR_UNWIND_MODE_CFI and "cfi" or "fp", cfi = out.unwind_cfi_stacks,
    fp = out.unwind_fp_stacks, cut = out.unwind_truncated, tables = u.tables, table_bytes = u.table_bytes }
  return out
end

-- The CFI unwinder's figures (runtime/api.h, struct mr_unwind_stats) as a
-- Lua table of numbers; all zero when stacks are walked by frame pointer.
function _M:unwind_stats()
  local s = rt.ffi.new("struct mr_unwind_stats")
  rt.lib.mr_profiler_unwind_stats(self.handle, s)
  local out = {}
  for _, k in ipairs({ "tables", "table_bytes", "built", "hits", "evicted", "not_loaded", "files_without_table",
    "rows", "unsupported_rows", "build_ns", "processes", "mappings_dropped", "built_on_demand" }) do
    out[k] = tonumber(s[k])
  end
  return out
end

-- Frees the kernel objects now rather than at garbage collection.
function _M:close()
  if self.handle then
    rt.lib.mr_profiler_close(rt.ffi.gc(self.handle, nil))
    self.handle = nil
  end
end

return _M
