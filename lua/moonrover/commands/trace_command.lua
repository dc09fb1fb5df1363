-- trace_command.lua - `moonrover trace`: prints the L7 exchanges (HTTP/1.x
-- requests and their responses) of every process, or of the processes given
-- (-p, --comm) and their children, as they complete, in time order within
-- each second, filtered (--port, --status, --min-duration, --path); a status
-- line on a terminal and a warning at the first records lost; then a summary
-- (to standard error) of what was seen, how long it took and what was lost.
-- The flow: check, open the network streams (net/source.lua), feed them to
-- the tracer (net/tracer.lua) until the duration ends, the traced processes
-- exit or Ctrl-C, write each exchange let through (net/trace_output.lua).
local C = require("moonrover.consts")
local args = require("moonrover.lib.args")
local container_id = require("moonrover.net.coroot_container")
local duration = require("moonrover.lib.duration")
local exchange = require("moonrover.net.exchange")
local output_file = require("moonrover.output_file")
local pid_list = require("moonrover.pid_list")
local protocol_list = require("moonrover.net.protocol_list")
local rt = require("moonrover.rt")
local source = require("moonrover.net.source")
local status_line = require("moonrover.lib.status_line")
local trace_filter = require("moonrover.net.trace_filter")
local trace_losses = require("moonrover.net.trace_losses")
local trace_memory = require("moonrover.net.trace_memory")
local trace_order = require("moonrover.net.trace_order")
local trace_output = require("moonrover.net.trace_output")
local trace_progress = require("moonrover.net.trace_progress")
local trace_targets = require("moonrover.net.trace_targets")
local tracer = require("moonrover.net.tracer")

local _M = {
  summary = "print the HTTP requests of the machine or some processes as they happen",
  usage = "moonrover trace [-p PID[,PID...] | --comm NAME] [--port PORT] [--status LIST] [--min-duration TIME] " ..
    "[--path PREFIX] [-d TIME] [-f text|json] [-o FILE]",
  description = "Follows TCP connections and the bytes they carry with eBPF (no change to the\n" ..
    "programs traced), parses the requests and their responses in Lua, and prints each\n" ..
    "exchange when its response ends. Filters combine: an exchange is printed when all match.\n" ..
    "Ctrl-C stops; a summary with latency percentiles goes to standard error.",
}

local EXIT_FAILED, EXIT_USAGE = 1, 2

-- The protocol modules named in text ("http,..."), or nil and why.
local function protocol_modules(text)
  local names = {}
  for name in text:gmatch("[^,]+") do
    names[#names + 1] = name
  end
  return protocol_list.modules(names)
end

-- A process name as the kernel keeps it: its first 15 bytes (as pgrep cuts it).
local COMM_BYTES = 15

local function comm_name(text)
  return text:sub(1, COMM_BYTES)
end

local function nanoseconds(text)
  local s, err = duration.seconds(text)
  return s and s * 1e9, err
end

_M.options = {
  { name = "pid", short = "p", arg = "PID[,PID...]", convert = args.pid_list,
    help = "trace only these processes, their threads and children (default: every process but moonrover)" },
  { name = "comm", arg = "NAME", convert = comm_name,
    help = "trace only the processes named NAME (its first 15 bytes, as in /proc) and their children (instead of -p)" },
  { name = "port", arg = "PORT", convert = trace_filter.port, help = "only exchanges with this port at either end" },
  { name = "status", arg = "LIST", convert = trace_filter.status,
    help = "only these response statuses: 404, 5xx, >=400, <300, several separated by ','" },
  { name = "min-duration", arg = "TIME", convert = nanoseconds,
    help = "only exchanges that took at least this long (100ms, 1.5s)" },
  { name = "path", arg = "PREFIX", help = "only requests whose target starts with PREFIX" },
  { name = "duration", short = "d", arg = "TIME", convert = args.duration,
    help = "how long to trace: 10, 30s, 5m (default: until Ctrl-C or the traced processes exit)" },
  { name = "format", short = "f", arg = "FORMAT", default = "text", convert = args.one_of({ "text", "json" }),
    help = "text (aligned columns) or json (one object per line)" },
  { name = "output", short = "o", arg = "FILE", default = "-",
    help = "where to write the exchanges ('-': standard output; a file is complete when the trace ends)" },
  { name = "protocol", arg = "LIST", default = "http",
    help = "the protocols to parse, separated by ',', in any case" },
  { name = "payload", arg = "BYTES", default = C.MR_NET_PAYLOAD_DEFAULT,
    convert = args.int_range(64, C.MR_NET_PAYLOAD_MAX),
    help = "bytes copied of each socket read or write (requests' heads must fit)" },
  { name = "queue-bytes", arg = "BYTES", default = 8388608, convert = args.int_range(65536, 1073741824),
    help = "socket records held for the parsers (rounded up to a power of two); more rides out longer bursts" },
}

local TICK_NS = 100e6
local ORDER_NS = 1e9         -- lines are held this long, then written sorted
local FINAL_DRAIN_NS = 300e6 -- the most spent at the end on what was queued before it
local SETTLE_NS = 50e6       -- at the end, the data plane moves what the kernel holds (every 10 ms)
local END_NS = 1e9
-- The tracer's memory budget, the agent's default for a script: above most
-- of it the tracer evicts idle connections and, while still above, only
-- counts new ones instead of parsing them (net/tracer.lua).
local MEMORY_LIMIT = 128 * 1048576
-- The kernel's ring of socket records: a trace runs for a while, by hand,
-- so it takes a larger ring than the resident agent's (512 KiB per CPU): a
-- body written fast in many sends (1.5 MiB from a Python server, up to 32
-- KiB copied of each until the parser's skip reaches the kernel) overflowed
-- 1 MiB while the trace's thread waited for a CPU.
local RING_BYTES = 8 * 1048576

local monotonic_ns = require("moonrover.lib.clock").monotonic_ns

-- Kernel (CLOCK_MONOTONIC) times to wall-clock times, from one reading of both.
local function wall_clock()
  local offset = rt.lib.mr_sys_epoch_ms() * 1e6 - monotonic_ns()
  return { wall_ns_at = function(ns)
    return ns + offset
  end }
end

-- The processes to follow now: those given or named job.comm, and their
-- descendants; a list, or nil and why.
local function initial_targets(job)
  local procs, err = pid_list.processes()
  if not procs then
    return nil, err
  end
  local list = trace_targets.initial({ pids = job.pids, comm = job.comm }, procs)
  if #list == 0 then
    return nil, job.comm and "no process named " .. job.comm or
      "none of pid " .. table.concat(job.pids, ",") .. " is a running process (a thread id? give its process's)"
  end
  return list
end

local function check(job)
  local detail = rt.ffi.new("char[512]")
  if rt.lib.mr_kernel_check("root", detail, 512) ~= 1 then
    return nil, "tracing needs " .. rt.ffi.string(rt.lib.mr_kernel_privileges()) .. ": " ..
      rt.ffi.string(detail):gsub(" %(needs .*%)$", "")
  end
  local ok, err = pid_list.check(job.pids)
  if not ok or not (job.pids or job.comm) then
    return ok, err
  end
  job.roots, err = initial_targets(job)
  return job.roots ~= nil, err
end

-- What the trace has done so far, for the status line.
local function figures(run, now)
  local lost, reasons = trace_progress.lost(run.src:stats())
  return { elapsed_s = (now - run.started) / 1e9, printed = run.printed, connections = run.tr:stats().connections,
    lost = lost, lost_reasons = reasons }
end

-- A tick: time passes for the tracer, the progress shows; every second the
-- lines held are written, the processes followed are checked, and after a
-- burst, a quiet second gives memory back (net/trace_memory.lua).
local function tick(run, now)
  run.tr:tick(now)
  run.progress:update(figures(run, now))
  if now >= run.next_order then
    run.order:flush()
    if run.targets then
      run.targets:sweep()
    end
    run.memory:second(run.moved)
    run.moved = 0
    run.next_order = now + ORDER_NS
  end
end

local function over(run, deadline, now)
  return (deadline and now >= deadline) or (run.targets and run.targets:all_gone())
end

-- Moves what is queued to the tracer (and the targets) for the trace's last moments.
local function drain_rest(run)
  local now = monotonic_ns()
  local settled, stop = now + SETTLE_NS, now + FINAL_DRAIN_NS
  while now < stop do
    if run.src:drain(run.tr, 1024) == 0 then
      if now >= settled then
        break
      end
      run.src:wait(10)
    end
    now = monotonic_ns()
  end
  -- The trace is over: what a tick would act on within END_NS (closes past
  -- their grace, held exchanges, responses ended by idleness) is acted on now.
  run.tr:tick(monotonic_ns() + END_NS, true)
end

-- Feeds the source to the tracer until the job ends; returns the seconds
-- traced. As the agent does, it drains again at once while records are
-- queued (a drain hands at most a few thousand of each queue, so that the
-- ticks keep their pace), and waits only when the queues are empty: one
-- drain per wakeup left the queues filling under a storm of connections.
local function follow(run, job)
  local lib, src = rt.lib, run.src
  run.started = monotonic_ns()
  run.next_order = run.started + ORDER_NS
  local deadline = job.duration_ns and run.started + job.duration_ns
  local next_tick = run.started + TICK_NS
  local on_process = run.targets and function(e) run.targets:on_process_event(e) end
  local moved = 0
  while lib.mr_sys_signal_pending() == 0 and not over(run, deadline, monotonic_ns()) do
    if moved == 0 then
      src:wait(100)
    end
    moved = on_process and src:drain_processes(on_process) or 0
    moved = moved + src:drain(run.tr)
    run.moved = run.moved + moved
    local now = monotonic_ns()
    if now >= next_tick then
      tick(run, now)
      next_tick = now + TICK_NS
    end
  end
  drain_rest(run)
  return (monotonic_ns() - run.started) / 1e9
end

-- An exchange's line is held as bytes (trace_order): the exchange goes
-- back to the pool once written, so that tracing allocates no table per
-- exchange.
local function on_exchange(run, ex)
  if run.keep(ex) then
    trace_output.count(run.tally, ex)
    trace_output.add(run.format, run.order, ex)
    run.printed = run.printed + 1
  end
  exchange.release(ex)
end

-- A trace of every process leaves moonrover's own connections out (an
-- agent beside it): the tracer asks once per connection, and only counts
-- their bytes. Processes chosen with -p or --comm are shown whatever they run.
local function new_tracer(run, job)
  local containers = container_id.new()
  return tracer.new({
    hide = not job.roots and pid_list.is_moonrover or nil,
    protocols = job.protocols,
    on_exchange = function(ex)
      on_exchange(run, ex)
    end,
    set_verdict = function(conn, verdict)
      run.src:set_verdict(conn, verdict)
    end,
    set_capture = function(conn, direction, skip_to)
      run.src:set_capture(conn, direction, skip_to)
    end,
    conn_open = function(conn)
      return run.src:conn_open(conn)
    end,
    memory_limit = MEMORY_LIMIT,
    container_id = function(pid)
      return containers:lookup(pid, monotonic_ns())
    end,
  })
end

-- The processes followed: job.roots (already in the kernel's filter), then
-- those found again now that forks are seen (started since the check).
local function new_targets(run, job)
  local targets = trace_targets.new({ comm = job.comm, start_of = pid_list.start_of,
    set = function(pid, add)
      return run.src:target(pid, add)
    end })
  targets:follow(job.roots)
  local list = initial_targets(job)
  if list then
    targets:follow(list)
  end
  return targets
end

local function what_is_traced(job)
  if job.comm then
    return "processes named " .. job.comm .. " (pid " .. table.concat(job.roots, ",") .. ") and their children"
  end
  return job.pids and "pid " .. table.concat(job.pids, ",") .. " and children" or "every process"
end

-- Writes a flush's lines; on a terminal's standard output, with the status
-- line erased meanwhile.
local function line_writer(out, job, line)
  if job.output ~= "-" then
    return function(text) out:write(text) end
  end
  return function(text)
    line:around(function() out:write(text) end)
  end
end

local function new_run(job, out)
  local line = status_line.new({ tty = rt.lib.mr_sys_stderr_is_tty() == 1 })
  local run = { printed = 0, moved = 0, memory = trace_memory.new(), tally = trace_output.tally(),
    format = trace_output.new(job.format, wall_clock()),
    keep = trace_filter.new({ port = job.port, status = job.status, min_duration_ns = job.min_duration_ns,
      path = job.path }),
    order = trace_order.new(line_writer(out, job, line)),
    progress = trace_progress.new(line) }
  run.tr = new_tracer(run, job)
  return run
end

-- Starts the source and the following of processes; true, or nil and why.
local function start(run, job)
  local ok, err = run.src:start()
  if not ok then
    return nil, err
  end
  if job.roots then
    run.targets = new_targets(run, job)
  end
  io.stderr:write("moonrover trace: tracing " .. what_is_traced(job) .. "\n")
  return true
end

-- Runs a trace; true, or nil and a one-line error.
function _M.trace(job)
  local ok, err = check(job)
  if not ok then
    return nil, err
  end
  local out
  out, err = output_file.open(job.output)
  if not out then
    return nil, err
  end
  local run = new_run(job, out)
  ok, err = rt.call(rt.lib.mr_sys_signals_catch)
  if ok then
    run.src, err = source.open({ pids = job.roots, payload_bytes = job.payload, queue_bytes = job.queue_bytes,
      ring_bytes = RING_BYTES })
  end
  if not run.src then
    out:abort()
    return nil, err
  end
  out:write(trace_output.header(run.format))
  ok, err = start(run, job)
  local seconds = ok and follow(run, job) or 0
  run.order:flush()
  run.progress:finish()
  local s, t = run.src:stats(), run.tr:stats()
  io.stderr:write(trace_output.summary(run.tally, seconds, trace_losses.drops(s, t, run.targets),
    trace_losses.notes(s, t, run.targets)))
  run.src:close()
  if not ok then
    out:abort()
    return nil, err
  end
  return out:commit()
end

function _M.run(values)
  local protocols, err = protocol_modules(values.protocol)
  if not protocols then
    io.stderr:write("moonrover trace: " .. err .. "\n")
    return EXIT_USAGE
  end
  if values.pid and values.comm then
    io.stderr:write("moonrover trace: give -p or --comm, not both\n")
    return EXIT_USAGE
  end
  local ok
  ok, err = _M.trace({
    pids = values.pid, comm = values.comm,
    port = values.port, status = values.status, min_duration_ns = values["min-duration"], path = values.path,
    duration_ns = values.duration and values.duration * 1e9,
    format = values.format,
    output = values.output,
    protocols = protocols,
    payload = values.payload,
    queue_bytes = values["queue-bytes"],
  })
  if not ok then
    io.stderr:write("moonrover trace: " .. err .. "\n")
    return EXIT_FAILED
  end
  return 0
end

return _M
