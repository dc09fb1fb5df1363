-- profiles_sharing.lua - the benchmark of moonrover.profiles sharing one
-- BPF profiler: PROFILES busy processes profiled at once for SECONDS, either
-- all at 99 Hz (one profiler, shared) or at 99, 98, 97 ... Hz (one profiler
-- each, since profiles share only at the same frequency). Alternates the two
-- ROUNDS times and prints, per run: this process's CPU (drains, naming,
-- splitting by pid), the BPF programs' run count and time (from the fdinfo
-- of their file descriptors; needs kernel.bpf_stats_enabled=1, which the
-- wrapper sets) and the samples the profiles got, as a Markdown table.
--   usage (from the repo root, as root; see profiles_sharing.sh):
--   MOONROVER_LIB=build/libmoonrover.so luajit scripts/bench/profiles_sharing.lua [SECONDS] [ROUNDS] [PROFILES]
-- The bundled Lua, then the build's generated modules (moonrover.consts).
package.path = "lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") .. "/?.lua;" ..
  package.path
local lfs = require("lfs")
local profiles = require("moonrover.profiles")
local rt = require("moonrover.rt").with_test_api()

local SECONDS = tonumber(arg[1]) or 10
local ROUNDS = tonumber(arg[2]) or 3
local PROFILES = tonumber(arg[3]) or 4
local WORKLOAD = (os.getenv("MOONROVER_WORKLOADS") or "build/workloads") .. "/duty_cycle"
local TICK_MS = 100
local CLK_TCK = 100

local function read_all(path)
  local fh = io.open(path, "rb")
  if not fh then
    return nil
  end
  local text = fh:read("*a")
  fh:close()
  return text
end

-- utime + stime of this process, in ticks.
local function cpu_ticks()
  local fields = {}
  for f in read_all("/proc/self/stat"):match("%) (.*)"):gmatch("%S+") do
    fields[#fields + 1] = f
  end
  return tonumber(fields[12]) + tonumber(fields[13])
end

-- Run count and time of the BPF programs this process holds.
local function bpf_runs()
  local count, ns = 0, 0
  for fd in lfs.dir("/proc/self/fdinfo") do
    local text = read_all("/proc/self/fdinfo/" .. fd) or ""
    if text:match("prog_type:") then
      count = count + tonumber(text:match("run_cnt:%s+(%d+)") or 0)
      ns = ns + tonumber(text:match("run_time_ns:%s+(%d+)") or 0)
    end
  end
  return count, ns
end

local function spawn(n)
  local pids = {}
  for i = 1, n do
    local p = io.popen(WORKLOAD .. " 50 3600 >/dev/null 2>&1 & echo $!")
    pids[i] = tonumber(p:read("*l"))
    p:close()
  end
  return pids
end

local function run(mode, pids)
  local handles = {}
  for i, pid in ipairs(pids) do
    local frequency = mode == "shared" and 99 or 100 - i
    handles[i] = assert(profiles.start({ pids = { pid }, frequency = frequency }))
  end
  local profilers = profiles.stats().profilers
  local ticks0 = cpu_ticks()
  for _ = 1, SECONDS * 1000 / TICK_MS do
    profiles.tick()
    rt.lib.mr_sys_sleep_ms(TICK_MS)
  end
  local runs, run_ns = bpf_runs()
  local samples = 0
  for _, h in ipairs(handles) do
    samples = samples + h:stop().total
  end
  return { mode = mode, profilers = profilers, cpu = (cpu_ticks() - ticks0) / CLK_TCK / SECONDS, runs = runs,
    run_ns = run_ns, samples = samples }
end

local pids = spawn(PROFILES)
print(string.format("%d profiles of %d processes (duty_cycle 50%%), %d s each run\n", PROFILES, PROFILES, SECONDS))
print("| run | profilers | this process's CPU | BPF runs/s | BPF time/s | samples/s |")
print("|---|---|---|---|---|---|")
for round = 1, ROUNDS do
  for _, mode in ipairs({ "shared", "separate" }) do
    local r = run(mode, pids)
    print(string.format("| %s %d | %d | %.2f%% of a core | %.0f | %.2f ms | %.0f |", r.mode, round, r.profilers,
      r.cpu * 100, r.runs / SECONDS, r.run_ns / 1e6 / SECONDS, r.samples / SECONDS))
  end
end
os.execute("kill " .. table.concat(pids, " "))
