-- trace_command.lua - `moonrover trace`: prints the L7 exchanges (HTTP/1.x
-- requests and their responses) of every process or the ones given, as they
-- complete, then a summary (to standard error) of what was seen and what
-- was lost. The flow: check, open the network streams (net/source.lua), feed
-- them to the tracer (net/tracer.lua) until the duration ends, the traced
-- processes exit or Ctrl-C, write each exchange (net/trace_output.lua).
local C = require("moonrover.consts")
local args = require("moonrover.lib.args")
local output_file = require("moonrover.output_file")
local pid_list = require("moonrover.pid_list")
local protocol_list = require("moonrover.net.protocol_list")
local rt = require("moonrover.rt")
local source = require("moonrover.net.source")
local trace_output = require("moonrover.net.trace_output")
local tracer = require("moonrover.net.tracer")

local _M = {
  summary = "print the HTTP requests of the machine or some processes as they happen",
  usage = "moonrover trace [--pid PID[,PID...]] [--duration SECONDS] [--format text|json] [--output FILE]",
  description = "Follows TCP connections and the bytes they carry with eBPF (no change to the\n" ..
    "programs traced), parses the requests and their responses in Lua, and prints each\n" ..
    "exchange when its response ends. Ctrl-C stops; a summary goes to standard error.",
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

_M.options = {
  { name = "pid", short = "p", arg = "PID[,PID...]", convert = args.pid_list,
    help = "trace only these processes (default: every process but moonrover)" },
  { name = "duration", short = "d", arg = "SECONDS", convert = args.positive_number,
    help = "how long to trace (default: until Ctrl-C or the traced processes exit)" },
  { name = "format", arg = "FORMAT", default = "text", convert = args.one_of({ "text", "json" }),
    help = "text (aligned columns) or json (one object per line)" },
  { name = "output", short = "o", arg = "FILE", default = "-",
    help = "where to write the exchanges ('-': standard output; a file is complete when the trace ends)" },
  { name = "protocol", arg = "LIST", default = "http",
    help = "the protocols to parse, separated by ','" },
  { name = "payload", arg = "BYTES", default = C.MR_NET_PAYLOAD_DEFAULT,
    convert = args.int_range(64, C.MR_NET_PAYLOAD_MAX),
    help = "bytes copied of each socket read or write (requests' heads must fit)" },
}

local TICK_NS = 100e6
local FINAL_DRAIN_NS = 300e6 -- the most spent at the end on what was queued before it
local SETTLE_NS = 50e6         -- at the end, the data plane moves what the kernel holds (every 10 ms)
local END_NS = 1e9

local function monotonic_ns()
  return tonumber(rt.lib.mr_sys_monotonic_ns())
end

-- Kernel (CLOCK_MONOTONIC) times to wall-clock times, from one reading of both.
local function wall_clock()
  local offset = rt.lib.mr_sys_epoch_ms() * 1e6 - monotonic_ns()
  return { wall_ns_at = function(ns)
    return ns + offset
  end }
end

local function check(job)
  local detail = rt.ffi.new("char[512]")
  if rt.lib.mr_kernel_check("root", detail, 512) ~= 1 then
    return nil, "tracing needs " .. rt.ffi.string(rt.lib.mr_kernel_privileges()) .. ": " ..
      rt.ffi.string(detail):gsub(" %(needs .*%)$", "")
  end
  return pid_list.check(job.pids)
end

-- Feeds the source to the tracer until the job ends.
local function follow(src, tr, job)
  local lib = rt.lib
  local started = monotonic_ns()
  local deadline = job.duration_ns and started + job.duration_ns
  local next_tick = started + TICK_NS
  while lib.mr_sys_signal_pending() == 0 do
    local now = monotonic_ns()
    if (deadline and now >= deadline) or (job.pids and pid_list.all_gone(job.pids)) then
      break
    end
    src:wait(100)
    src:drain(tr)
    now = monotonic_ns()
    if now >= next_tick then
      tr:tick(now)
      job.flush()
      next_tick = now + TICK_NS
    end
  end
  local now = monotonic_ns()
  local settled, stop = now + SETTLE_NS, now + FINAL_DRAIN_NS
  while now < stop do
    if src:drain(tr, 1024) == 0 then
      if now >= settled then
        break
      end
      src:wait(10)
    end
    job.flush()
    now = monotonic_ns()
  end
  -- The trace is over: what a tick would act on within END_NS (closes past
  -- their grace, held exchanges, responses ended by idleness) is acted on now.
  tr:tick(monotonic_ns() + END_NS, true)
  return (monotonic_ns() - started) / 1e9
end

local function drops(src, tr)
  local s, t = src:stats(), tr:stats()
  return {
    { reason = "kernel ring full (data)", n = s.kernel.lost_data },
    { reason = "kernel ring full (connections)", n = s.kernel.lost_events },
    { reason = "queue full (data)", n = s.net.dropped_queue },
    { reason = "queue full (connections)", n = s.tcp.dropped_queue },
    { reason = "still queued at the end (data)", n = s.net.queued },
    { reason = "still queued at the end (connections)", n = s.tcp.queued },
    { reason = "connection map full", n = s.kernel.conns_full },
    { reason = "bytes unreadable", n = s.kernel.unreadable },
    { reason = "gaps in a connection's bytes", n = t.gaps },
    { reason = "connections evicted", n = t.evicted },
  }
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
  ok, err = rt.call(rt.lib.mr_sys_signals_catch)
  local src
  if ok then
    src, err = source.open({ pids = job.pids, payload_bytes = job.payload })
  end
  if not src then
    out:abort()
    return nil, err
  end
  local format, tally, pending = trace_output.new(job.format, wall_clock()), {}, {}
  out:write(trace_output.header(format))
  local tr = tracer.new({
    protocols = job.protocols,
    on_exchange = function(ex)
      trace_output.count(tally, ex)
      pending[#pending + 1] = trace_output.line(format, ex)
    end,
    set_verdict = function(conn, verdict)
      src:set_verdict(conn, verdict)
    end,
  })
  job.flush = function()
    if #pending > 0 then
      out:write(table.concat(pending))
      pending = {}
    end
  end
  ok, err = src:start()
  if ok then
    io.stderr:write("moonrover trace: tracing " .. (job.pids and "pid " .. table.concat(job.pids, ",") or
      "every process") .. "\n")
  end
  local seconds = ok and follow(src, tr, job) or 0
  job.flush()
  io.stderr:write(trace_output.summary(tally, seconds, drops(src, tr)))
  src:close()
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
  local ok
  ok, err = _M.trace({
    pids = values.pid,
    duration_ns = values.duration and values.duration * 1e9,
    format = values.format,
    output = values.output,
    protocols = protocols,
    payload = values.payload,
  })
  if not ok then
    io.stderr:write("moonrover trace: " .. err .. "\n")
    return EXIT_FAILED
  end
  return 0
end

return _M
