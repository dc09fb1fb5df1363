-- profile_command.lua - `moonrover profile`: a standalone whole-system (or per-process)
-- on-CPU or off-CPU profile. The flow: validate, open and start the profiler,
-- drain periodically until the duration ends (or Ctrl-C), stop, drain the rest,
-- write folded / pprof / SVG, print a summary.
local args = require("moonrover.lib.args")
local output_file = require("moonrover.output_file")
local output_format = require("moonrover.profiler.output_format")
local rt = require("moonrover.rt")
local pid_list = require("moonrover.pid_list")
local profiler = require("moonrover.profiler.profiler")
local profile_view = require("moonrover.profiler.profile_view")
local progress = require("moonrover.profiler.progress")
local summary = require("moonrover.profiler.summary")

local _M = {
  summary = "profile the machine or some processes into a flame graph, pprof or folded stacks",
  usage = "moonrover profile [-p PID[,PID...]] [-d DURATION] [-F HZ] [-o FILE] [-f FORMAT] ...",
  description = "Samples on-CPU stacks (or, with --off-cpu, the time threads spend blocked) with\n" ..
    "eBPF, for every process (moonrover itself left out) or the ones given, and writes them\n" ..
    "symbolized. On a terminal, a status line shows the progress about once a second.\n" ..
    "Short options take their value attached or apart (-F99, -F 99), long ones after '='\n" ..
    "or apart (--duration=5s, --duration 5s); formats are case-insensitive.",
}

_M.options = {
  { name = "pid", short = "p", arg = "PID[,PID...]", convert = args.pid_list,
    help = "profile only these processes (default: every process)" },
  { name = "duration", short = "d", arg = "DURATION", default = 10, convert = args.duration,
    help = "how long to profile, in seconds or with a unit (5s, 2m, 250ms); Ctrl-C stops early and still " ..
      "writes the output" },
  { name = "frequency", short = "F", arg = "HZ", default = 99, convert = args.int_range(1, 10000),
    help = "on-CPU samples per second on each CPU (not used by --off-cpu)" },
  { name = "off-cpu", help = "profile time spent blocked (sleeping, waiting for I/O or locks), " ..
    "weighted by nanoseconds, instead of on-CPU time" },
  { name = "output", short = "o", arg = "FILE", default = "profile.svg",
    help = "where to write the profile; '-' is standard output (folded unless --format says)" },
  { name = "format", short = "f", arg = "FORMAT", convert = args.one_of({ "folded", "pprof", "svg" }),
    help = "folded, pprof or svg (default: from the output file's extension: " ..
      ".svg, .pb.gz/.pprof, .folded/.txt)" },
  { name = "no-kernel", help = "drop kernel frames (keep only user-space stacks)" },
  { name = "per-thread", help = "split stacks by thread: a 'tid-TID (NAME)' frame below the process in " ..
    "folded and SVG, a 'thread' label in pprof" },
  { name = "unwind", arg = "fp|cfi", convert = args.one_of({ "fp", "cfi" }),
    help = "walk user stacks by unwind tables from .eh_frame (cfi, the default) or by frame pointers only (fp)" },
}

local DRAIN_INTERVAL_NS = 2e9
local POLL_MAX_MS = 200

function _M.format_for(output, format)
  local f, err = output_format.for_path(output, format)
  if not f then
    return nil, err .. ": use --format folded|pprof|svg"
  end
  return f
end

local function check_privileges()
  local detail = rt.ffi.new("char[512]")
  if rt.lib.mr_kernel_check("root", detail, 512) ~= 1 then
    return nil, "profiling needs " .. rt.ffi.string(rt.lib.mr_kernel_privileges()) .. ": " ..
      rt.ffi.string(detail):gsub(" %(needs .*%)$", "")
  end
  return true
end

-- The one-line warnings about options given that do not apply.
local function warnings_for(values, given)
  local warnings = {}
  if values["off-cpu"] and given.frequency then
    warnings[#warnings + 1] = "moonrover profile: --frequency does not apply to off-CPU profiles " ..
      "(they weigh blocked time, not samples): ignored"
  end
  return warnings
end

-- Turns the command's values (and the set of options given) into a job, or
-- nil and the first problem.
function _M.job_from(values, given)
  local format, err = _M.format_for(values.output, values.format)
  if not format then
    return nil, err
  end
  return {
    warnings = warnings_for(values, given or {}),
    per_thread = values["per-thread"] == true,
    pids = values.pid,
    duration_ns = values.duration * 1e9,
    frequency = values.frequency,
    off_cpu = values["off-cpu"] == true,
    kernel = not values["no-kernel"],
    unwind = values.unwind,
    output = values.output,
    format = format,
  }
end

local monotonic_ns = require("moonrover.lib.clock").monotonic_ns

local function ms_until(deadline, now)
  return math.max(0, math.floor((deadline - now) / 1e6))
end

-- Profiles until the duration ends, a signal arrives or every profiled
-- process has exited (noted in job.gone_after_ns); drains on the way.
local function collect(p, job, shown)
  local lib = rt.lib
  local started = monotonic_ns()
  local now = started
  local function stats()
    return p:stats()
  end
  local deadline = now + job.duration_ns
  local next_drain = now + DRAIN_INTERVAL_NS
  while now < deadline and lib.mr_sys_signal_pending() == 0 do
    if job.pids and pid_list.all_gone(job.pids) then
      job.gone_after_ns = now - started
      break
    end
    p:poll(math.min(POLL_MAX_MS, ms_until(deadline, now), ms_until(next_drain, now) + 1))
    now = monotonic_ns()
    shown:tick(now, stats)
    if now >= next_drain then
      local ok, err = p:drain()
      if not ok then
        return nil, err
      end
      next_drain = now + DRAIN_INTERVAL_NS
    end
  end
  p:stop()
  return p:drain()
end

-- Writes the profile into out and finishes it; true, or nil and why.
local function write_output(p, job, stacks, meta, out)
  if job.format == "pprof" then
    local ok, err = rt.call(rt.lib.mr_pprof_write, p.profile, out.handle, job.off_cpu and 1 or 0,
      p.period_ns, meta.duration_ns, output_format.pprof_main_file(job.pids))
    if not ok then
      out:abort()
      return nil, "cannot write " .. job.output .. ": " .. err
    end
  else
    require("moonrover.profiler.writers." .. job.format).write(stacks, meta, out)
  end
  return out:commit()
end

function _M.summary_stats(s, job, duration_ns)
  local lost = {}
  for _, r in ipairs(profiler.LOST) do
    lost[#lost + 1] = { reason = r.reason, n = s[r.field] or 0 }
  end
  local since = job.launch_ns or s.start_ns or 0
  local first = (s.first_sample_ns or 0) > 0 and since > 0 and (s.first_sample_ns - since) / 1e6
  return {
    samples = s.samples,
    idle_samples = s.idle_samples,
    lost = lost,
    processes = s.processes,
    stacks = s.stacks,
    truncated = s.truncated_stacks,
    output = job.output,
    duration = duration_ns / 1e9,
    first_sample_ms = first or nil,
    unwind = s.unwind,
  }
end

local function meta_for(job, duration_ns)
  local what = job.off_cpu and "Off-CPU time" or "On-CPU samples"
  local scope = job.pids and ("pid " .. table.concat(job.pids, ",")) or "all processes"
  return {
    title = string.format("moonrover: %s, %s", what, scope),
    scope = scope,
    subtitle = string.format("%.1f s%s", duration_ns / 1e9,
      job.off_cpu and "" or string.format(", %d Hz", job.frequency)),
    unit = job.off_cpu and "nanoseconds" or "samples",
    off_cpu = job.off_cpu,
    duration_ns = duration_ns,
  }
end

-- Opens the profiler and catches Ctrl-C; the profiler, or nil and why.
local function open_profiler(job)
  local p, err = profiler.open(job)
  if not p then
    return nil, err
  end
  local ok
  ok, err = rt.call(rt.lib.mr_sys_signals_catch)
  if not ok then
    p:close()
    return nil, err
  end
  return p
end

-- Profiles; { profiler (closed), duration_ns, stats }, or nil and why.
local function run_profiler(job)
  local p, err = open_profiler(job)
  if not p then
    return nil, err
  end
  local started = monotonic_ns()
  local shown = progress.new({ tty = rt.lib.mr_sys_stderr_is_tty() == 1, started_ns = started,
    duration_ns = job.duration_ns })
  for _, warning in ipairs(job.warnings) do
    shown:warn(warning)
  end
  local ok
  ok, err = p:start()
  if ok then
    ok, err = collect(p, job, shown)
  end
  shown:finish()
  -- The profiler counts nothing past the duration, however late it stops.
  local elapsed = job.gone_after_ns or (monotonic_ns() - started)
  local run = { profiler = p, duration_ns = math.min(elapsed, job.duration_ns), stats = p:stats() }
  p:close()
  if not ok then
    return nil, err
  end
  return run
end

-- Runs a whole job; returns true, or nil and a one-line error.
function _M.profile(job)
  local ok, err = check_privileges()
  if ok then
    ok, err = pid_list.check(job.pids)
  end
  if not ok then
    return nil, err
  end
  -- opened first: an output that cannot be written fails now, not after the profile
  local out
  out, err = output_file.open(job.output)
  if not out then
    return nil, err
  end
  local run
  run, err = run_profiler(job)
  if not run then
    out:abort()
    return nil, err
  end
  local p, duration_ns, stats = run.profiler, run.duration_ns, run.stats
  local stacks = profile_view.stacks(p.profile)
  local meta = meta_for(job, duration_ns)
  ok, err = write_output(p, job, stacks, meta, out)
  if not ok then
    return nil, err
  end
  local figures = _M.summary_stats(stats, job, duration_ns)
  figures.gone_after = job.gone_after_ns and job.gone_after_ns / 1e9
  local report = job.output == "-" and io.stderr or io.stdout
  report:write(summary.format(summary.compute(stacks, meta, 10), figures, meta))
  if figures.first_sample_ms then
    report:write(string.format("first sample %.1f ms after start\n", figures.first_sample_ms))
  end
  return true
end

local EXIT_FAILED, EXIT_USAGE = 1, 2

function _M.run(values, given)
  local launch_ns = monotonic_ns()
  local job, err = _M.job_from(values, given)
  if not job then
    io.stderr:write("moonrover profile: " .. err .. "\n")
    return EXIT_USAGE
  end
  job.launch_ns = launch_ns
  local ok
  ok, err = _M.profile(job)
  if not ok then
    io.stderr:write("moonrover profile: " .. err .. "\n")
    return EXIT_FAILED
  end
  return 0
end

return _M
