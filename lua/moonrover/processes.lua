-- processes.lua - process facts for agent scripts (docs/lua-api.md,
-- "Processes"): the processes of the machine with their names, command lines,
-- cgroups and owners; per-process CPU share, threads and resident memory over
-- the interval since a sampler last saw each one; the load averages.
--
-- Everything is read from /proc (or the host's /proc named by
-- ROVER_HOST_PROC_MAPPING) and nothing raises on a process that exits while
-- it is read: it is left out. A sampler reads /proc/PID/stat of all its pids
-- in one runtime call, through files it keeps open, so sampling hundreds of
-- processes a second is cheap.
local rt = require("moonrover.rt")
local facts = require("moonrover.rover.finder_facts")
local pid_list = require("moonrover.pid_list")
local rover_container = require("moonrover.rover.container_id")
local net_container = require("moonrover.net.coroot_container")

local _M = {}

local ffi, lib = rt.ffi, rt.lib

-- A pid the sampler has not been asked about for this long is forgotten.
local FORGET_AFTER = 300

-- Seconds on the monotonic clock (the clock of agent.now()).
local monotonic = require("moonrover.lib.clock").monotonic_s

-- The boot time in Unix seconds (the kernel's, a whole second: the same for
-- every script and version), read once per Lua state.
local boot_epoch

local function unix_start(start_seconds)
  boot_epoch = boot_epoch or lib.mr_proc_boot_epoch()
  return boot_epoch + start_seconds
end

-- The effective uid of a /proc/PID/status text, or nil.
local function status_uid(text)
  return tonumber(text and text:match("\nUid:%s+%d+%s+(%d+)"))
end

-- The facts of one process whose stat record was read, or nil when it exited
-- meanwhile.
local function describe(rec)
  local pid = rec.pid
  local cmdline = facts.read(pid, "cmdline")
  local cgroup_text = facts.read(pid, "cgroup")
  local uid = status_uid(facts.read(pid, "status"))
  if not (cmdline and cgroup_text and uid) then
    return nil
  end
  return {
    pid = pid,
    comm = ffi.string(rec.comm),
    exe = facts.exe(pid) or "",
    cmdline = cmdline,
    cgroup = net_container.cgroup_path(cgroup_text),
    container_id = rover_container.from_cgroup(cgroup_text),
    start_time = unix_start(rec.start_seconds),
    uid = uid,
  }
end

-- Every process: an array of { pid, comm, exe, cmdline, cgroup, container_id,
-- start_time, uid }, in pid order of /proc; or nil and why when /proc cannot
-- be listed.
function _M.list()
  return pid_list.map_live(function(pids, n)
    local recs = ffi.new("struct mr_proc_stat[?]", math.max(n, 1))
    lib.mr_proc_stat_read(pids, n, recs)
    return function(i)
      return recs[i].pid ~= 0 and describe(recs[i])
    end
  end)
end

-- One process as list() gives it, or nil and why.
function _M.get(pid)
  if type(pid) ~= "number" or pid <= 0 or pid ~= math.floor(pid) or pid > 0x7fffffff then
    return nil, "get(pid): pid must be a positive integer, not " .. tostring(pid)
  end
  local one = ffi.new("int32_t[1]", pid)
  local rec = ffi.new("struct mr_proc_stat[1]")
  local p = lib.mr_proc_stat_read(one, 1, rec) == 1 and describe(rec[0])
  if not p then
    return nil, "no process " .. pid
  end
  return p
end

-- { load1, load5, load15, cpus }, or nil and why.
function _M.system()
  local s = ffi.new("struct mr_proc_system")
  local ok, err = rt.call(lib.mr_proc_system_read, s)
  if not ok then
    return nil, err
  end
  return { load1 = s.load1, load5 = s.load5, load15 = s.load15, cpus = s.cpus }
end

local Sampler = {}
Sampler.__index = Sampler

-- A sampler: it remembers what it last read of each pid, so that each sample
-- gives the CPU share of the interval since, and keeps the pids' stat files
-- open between samples (runtime/proc/proc_watch.c). opts.now: a clock in
-- seconds (default: monotonic), for specs. nil and why when out of memory.
function _M.sampler(opts)
  opts = opts or {}
  local reader, err = rt.call(lib.mr_proc_watch_new)
  if not reader then
    return nil, err
  end
  local s = setmetatable({ reader = ffi.gc(reader, lib.mr_proc_watch_free), now = opts.now or monotonic, seen = {},
    room = 0, swept = nil }, Sampler)
  s:reserve(1)
  return s
end

-- Room for n records in the sampler's buffers.
function Sampler:reserve(n)
  if n > self.room then
    self.room = math.max(n, 2 * self.room, 64)
    self.pids = ffi.new("int32_t[?]", self.room)
    self.recs = ffi.new("struct mr_proc_stat[?]", self.room)
  end
end

-- Copies the pids asked for into the buffer: their count, or nil and why.
function Sampler:load_pids(pids)
  if pids == nil then
    local all, n = pid_list.live_pids()
    if not all then
      return nil, n
    end
    self:reserve(n)
    ffi.copy(self.pids, all, n * ffi.sizeof("int32_t"))
    return n
  end
  if type(pids) ~= "table" then
    return nil, "sample(pids): pids must be a list of pids or nil, not " .. type(pids)
  end
  local n = #pids
  self:reserve(n)
  for i = 1, n do
    local pid = tonumber(pids[i])
    self.pids[i - 1] = pid and pid > 0 and pid <= 0x7fffffff and pid == math.floor(pid) and pid or 0
  end
  return n
end

-- The reading of rec at time t, with its CPU share since the last one of the
-- same process (nil for a pid first seen, or reused by another process).
function Sampler:reading(rec, t)
  local pid = rec.pid
  local last = self.seen[pid]
  local cpu_seconds, start_ticks = rec.cpu_seconds, tonumber(rec.start_ticks)
  local cpu
  if last and last.start == start_ticks and t > last.at then
    cpu = math.max(0, cpu_seconds - last.cpu) / (t - last.at)
  end
  if last then
    last.start, last.cpu, last.at = start_ticks, cpu_seconds, t
  else
    self.seen[pid] = { start = start_ticks, cpu = cpu_seconds, at = t }
  end
  return { cpu = cpu, threads = rec.threads, rss_bytes = tonumber(rec.rss_bytes), comm = ffi.string(rec.comm),
    start_time = unix_start(rec.start_seconds) }
end

-- Forgets pids not read for FORGET_AFTER seconds (checked once a minute).
function Sampler:sweep(t)
  if self.swept and t - self.swept < 60 then
    return
  end
  self.swept = t
  for pid, last in pairs(self.seen) do
    if t - last.at > FORGET_AFTER then
      self.seen[pid] = nil
    end
  end
end

-- sample(pids): pid -> { cpu, threads, rss_bytes, comm, start_time } for the
-- pids listed (nil: every process). cpu is the share of one core used since
-- this sampler last read the pid (1.0: one core busy all along); nil the first
-- time, and after the pid was reused. Processes that exited are absent.
-- Returns nil and why when pids is not a list or /proc cannot be listed.
function Sampler:sample(pids)
  local n, err = self:load_pids(pids)
  if not n then
    return nil, err
  end
  local out = {}
  local t = self.now()
  if lib.mr_proc_watch_read(self.reader, self.pids, n, self.recs) < 0 then
    return nil, "cannot sample processes: the system's clock tick or page size is unknown"
  end
  for i = 0, n - 1 do
    local rec = self.recs[i]
    if rec.pid ~= 0 then
      out[rec.pid] = self:reading(rec, t)
    elseif self.pids[i] ~= 0 then
      self.seen[self.pids[i]] = nil
    end
  end
  self:sweep(t)
  return out
end

return _M
