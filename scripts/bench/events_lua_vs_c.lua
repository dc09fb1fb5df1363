-- events_lua_vs_c.lua - the event-path benchmark: getppid() calls of a
-- generator pinned to CPU1 become struct mr_bench_event records (bench.bpf.c)
-- that the data plane moves into its bench queue; this process (pinned to
-- CPU0 by the wrapper) consumes them in one of two ways, alternating:
--   C:   mr_data_plane_drain_in_c (peek, count per pid in a C hash table, release)
--   Lua: peek, a JIT-compiled loop over the storage (cast once) counting per
--        pid in a Lua table, release
-- and reports events/s delivered, the consumer thread's CPU per million
-- events, the data-plane thread's CPU and drops, as a Markdown table.
--   usage (from the repo root, as root; see events_lua_vs_c.sh):
--   MOONROVER_LIB=build/libmoonrover.so luajit scripts/bench/events_lua_vs_c.lua [SECONDS] [ROUNDS]
-- The bundled Lua, then the build's generated modules (moonrover.consts).
package.path = "lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") .. "/?.lua;" ..
  package.path
local lfs = require("lfs")
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

ffi.cdef([[
struct pollfd { int fd; short events; short revents; };
int poll(struct pollfd *fds, unsigned long nfds, int timeout);
ssize_t read(int fd, void *buf, size_t count);
struct timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct timespec *ts);
]])

local SECONDS = tonumber(arg[1]) or 5
local ROUNDS = tonumber(arg[2]) or 3
local GENERATOR = (os.getenv("MOONROVER_WORKLOADS") or "build/workloads") .. "/getppid_loop"
local DATA_PLANE_THREAD = "mr-data-plane"
local CLOCK_THREAD_CPUTIME_ID = 3
local CLK_TCK = 100 -- /proc/.../stat time unit (USER_HZ)
local POLLIN = 1
local BENCH = lib.MR_STREAM_BENCH
local MAX_RUN = 65536

local function read_all(path)
  local fh = io.open(path, "rb")
  if not fh then
    return nil
  end
  local text = fh:read("*a")
  fh:close()
  return text
end

local function thread_cpu_ns()
  local ts = ffi.new("struct timespec")
  assert(ffi.C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts) == 0, "clock_gettime failed")
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

-- CPU time (utime + stime) of the data plane's thread, in ns.
local function data_plane_cpu_ns()
  for tid in lfs.dir("/proc/self/task") do
    local dir = "/proc/self/task/" .. tid
    if (read_all(dir .. "/comm") or ""):find(DATA_PLANE_THREAD, 1, true) == 1 then
      local rest = read_all(dir .. "/stat"):match("%) (.*)")
      local fields = {}
      for f in rest:gmatch("%S+") do
        fields[#fields + 1] = f
      end
      -- fields[1] is stat's 3rd field (state): utime and stime are the 14th and 15th.
      return (tonumber(fields[12]) + tonumber(fields[13])) / CLK_TCK * 1e9
    end
  end
  error("no " .. DATA_PLANE_THREAD .. " thread")
end

-- Gone, or a zombie waiting to be reaped.
local function alive(pid)
  local stat = read_all("/proc/" .. pid .. "/stat")
  return stat ~= nil and not stat:match("^%d+ %(.-%) Z")
end

-- Starts the generator on CPU1, stopped until resumed, so that the BPF
-- filter can name its pid before its first call.
local function spawn_generator()
  local cmd = "exec taskset -c 1 " .. GENERATOR .. " " .. SECONDS
  local p = io.popen("sh -c 'kill -STOP $$; " .. cmd .. "' >/dev/null 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  for _ = 1, 200 do
    if (read_all("/proc/" .. pid .. "/stat") or ""):match("^%d+ %(.-%) T") then
      return pid
    end
    lib.mr_sys_sleep_ms(5)
  end
  error("the generator did not start")
end

-- The Lua consumer: the storage is cast once, the loop stays compiled.
local counts = {}
local function lua_drainer(d)
  local base = ffi.cast("struct mr_bench_event *", lib.mr_data_plane_storage(d, BENCH))
  local index = ffi.new("uint32_t[1]")
  return function()
    local total = 0
    while true do
      local n = lib.mr_data_plane_peek(d, BENCH, MAX_RUN, index)
      if n == 0 then
        return total
      end
      local first = index[0]
      for i = first, first + n - 1 do
        local pid = base[i].pid
        counts[pid] = (counts[pid] or 0) + 1
      end
      lib.mr_data_plane_release(d, BENCH, n)
      total = total + n
    end
  end
end

local function c_drainer(d)
  return function()
    return tonumber(lib.mr_data_plane_drain_in_c(d, BENCH))
  end
end

-- Waits for the notify eventfd like the agent's main loop, then drains,
-- until the generator is gone and a last drain found nothing. Returns the
-- time of the last drain that found events.
local function consume(d, pid, drain)
  local pfd = ffi.new("struct pollfd[1]")
  pfd[0].fd, pfd[0].events = lib.mr_data_plane_notify_fd(d), POLLIN
  local buf = ffi.new("uint64_t[1]")
  local finishing, last = 0, lib.mr_sys_monotonic_ns()
  while finishing < 3 do
    if ffi.C.poll(pfd, 1, 100) > 0 then
      assert(ffi.C.read(pfd[0].fd, buf, 8) == 8, "read of the notify eventfd failed")
    end
    local n = drain()
    if n > 0 then
      last = lib.mr_sys_monotonic_ns()
    end
    if not alive(pid) then
      finishing = n == 0 and finishing + 1 or 0
    end
  end
  return last
end

local function run_round(mode)
  local pid = spawn_generator()
  local d = assert(rt.call(lib.mr_data_plane_open_bench, ffi.new("struct mr_data_plane_opts"), pid))
  assert(rt.call(lib.mr_data_plane_start, d))
  local drain = mode == "Lua" and lua_drainer(d) or c_drainer(d)
  local t0, cpu0, dp0 = lib.mr_sys_monotonic_ns(), thread_cpu_ns(), data_plane_cpu_ns()
  os.execute("kill -CONT " .. pid)
  local wall = tonumber(consume(d, pid, drain) - t0)
  local cpu, dp = thread_cpu_ns() - cpu0, data_plane_cpu_ns() - dp0
  local s = ffi.new("struct mr_data_plane_stream_stats")
  lib.mr_data_plane_stream_stats(d, BENCH, s)
  lib.mr_data_plane_close(d)
  return {
    mode = mode, delivered = tonumber(s.delivered), wall_ns = wall, cpu_ns = cpu, dp_ns = dp,
    dropped = tonumber(s.dropped_queue + s.dropped_kernel), queued = tonumber(s.queued),
  }
end

local function row(r)
  local m = r.delivered / 1e6
  return string.format("| %s | %d | %.2f | %.3f | %.1f | %.1f | %.1f | %d |", r.mode, r.delivered,
    r.delivered / (r.wall_ns / 1e9) / 1e6, r.wall_ns / 1e9, r.cpu_ns / 1e6, r.cpu_ns / 1e6 / m,
    r.dp_ns / 1e6 / m, r.dropped)
end

local function main()
  local totals = { C = { events = 0, cpu = 0 }, Lua = { events = 0, cpu = 0 } }
  print(string.format("generator: getppid_loop %gs on CPU1; consumer on CPU0; %d rounds; jit: %s",
    SECONDS, ROUNDS, tostring(jit.status())))
  print()
  print("| mode | events | M events/s | seconds to the last event | consumer CPU ms | consumer ms / M events "
    .. "| data-plane thread ms / M events | dropped |")
  print("|---|---|---|---|---|---|---|---|")
  for _ = 1, ROUNDS do
    for _, mode in ipairs({ "C", "Lua" }) do
      local r = run_round(mode)
      totals[mode].events = totals[mode].events + r.delivered
      totals[mode].cpu = totals[mode].cpu + r.cpu_ns
      print(row(r))
    end
  end
  local c = totals.C.cpu / totals.C.events * 1e6
  local l = totals.Lua.cpu / totals.Lua.events * 1e6
  print()
  print(string.format("consumer CPU per million events: C %.2f ms, Lua %.2f ms; Lua cost / C cost = %.2f",
    c / 1e6, l / 1e6, l / c))
end

main()
