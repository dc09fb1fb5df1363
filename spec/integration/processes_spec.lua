-- Specs for moonrover.processes on real processes: the list and one process's
-- facts, CPU shares of a busy loop and a sleeper over an interval, threads,
-- processes that exit, pids reused, and the load averages.
local processes = require("moonrover.processes")
local e2e = require("support.e2e")
local clock = require("support.clock")
local files = require("support.files")
local proc_mapping = require("support.proc_mapping")
local capture = require("support.shell").capture

local ffi = require("ffi")
pcall(ffi.cdef, "int getpid(void);")

local function own_pid()
  return ffi.C.getpid()
end

-- Starts a shell command in the background; returns its pid.
local function start(cmd)
  local p = assert(io.popen(cmd .. " >/dev/null 2>&1 & echo $!"))
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

describe("processes", function()
  local pids = {}

  after_each(function()
    for _, pid in ipairs(pids) do
      e2e.kill(pid)
    end
    pids = {}
  end)

  local function spawn(cmd)
    local pid = start(cmd)
    pids[#pids + 1] = pid
    return pid
  end

  it("lists this process with its name, executable, command line, cgroup and owner", function()
    local me = own_pid()
    local list = assert(processes.list())
    local found
    for _, p in ipairs(list) do
      if p.pid == me then
        found = p
      end
    end
    assert.is_table(found, "this process (" .. me .. ") is not in the list of " .. #list)
    local cmdline = files.read("/proc/self/cmdline"):gsub("%z$", ""):gsub("%z", " ")
    assert.equal(files.read("/proc/self/comm"):gsub("\n$", ""), found.comm)
    assert.equal(capture("readlink /proc/" .. me .. "/exe"):gsub("\n$", ""), found.exe)
    assert.equal(cmdline, found.cmdline)
    assert.equal(tonumber(capture("id -u")), found.uid)
    assert.truthy(found.cgroup:find("^/"))
    local v2 = files.read("/proc/self/cgroup"):match("^0::(%S+)\n$")
    if v2 then
      assert.equal(v2, found.cgroup)
    end
    local btime = tonumber(files.read("/proc/stat"):match("\nbtime (%d+)"))
    local ticks = tonumber(files.read("/proc/self/stat"):match("%) (.*)"):match(("%S+ "):rep(19) .. "(%d+)"))
    local expected = btime + ticks / tonumber(capture("getconf CLK_TCK"))
    assert.is_true(math.abs(found.start_time - expected) < 1e-6,
      "start time " .. found.start_time .. ", not " .. expected)
    assert.same(found, processes.get(me))
  end)

  it("answers nil and why for a process that does not exist or a bad pid", function()
    local p, err = processes.get(0x7ffffff0)
    assert.is_nil(p)
    assert.equal("no process " .. 0x7ffffff0, err)
    p, err = processes.get("x")
    assert.is_nil(p)
    assert.equal("get(pid): pid must be a positive integer, not x", err)
  end)

  it("gives a busy loop about one core and a sleeper about none, over the interval", function()
    local busy = spawn("exec sh -c 'while :; do :; done'")
    local sleeper = spawn("exec sleep 60")
    local s = processes.sampler()
    local first = assert(s:sample({ busy, sleeper }))
    assert.is_nil(first[busy].cpu)
    assert.is_nil(first[sleeper].cpu)
    os.execute("sleep 2")
    local second = assert(s:sample({ busy, sleeper }))
    -- Generous bounds: the machine is shared, and ticks are 10 ms.
    assert.is_true(second[busy].cpu > 0.2 and second[busy].cpu < 1.2, "busy loop: " .. second[busy].cpu)
    assert.is_true(second[sleeper].cpu < 0.05, "sleeper: " .. second[sleeper].cpu)
    assert.equal("sleep", second[sleeper].comm)
    assert.equal(1, second[sleeper].threads)
    assert.is_true(second[sleeper].rss_bytes > 0)
    assert.equal(first[sleeper].start_time, second[sleeper].start_time)
  end)

  it("counts the threads of a multi-threaded process", function()
    local pid = spawn("exec python3 -c 'import threading, time\n" ..
      "for _ in range(4): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n" ..
      "time.sleep(60)'")
    local s = processes.sampler()
    local threads = clock.wait_for(function()
      local r = s:sample({ pid })[pid]
      return r and r.threads == 5 and r.threads
    end)
    assert.equal(5, threads, "python3 with 4 threads never showed 5 threads")
  end)

  it("leaves out a process that exited, without an error, and forgets it", function()
    local pid = spawn("exec sleep 60")
    local s = processes.sampler()
    assert.is_table(s:sample({ pid })[pid])
    e2e.kill(pid)
    local gone = clock.wait_for(function()
      local r = assert(s:sample({ pid, own_pid() }))
      return r[pid] == nil and r[own_pid()] ~= nil
    end)
    assert.is_true(gone, "process " .. pid .. " still sampled after it was killed")
    assert.is_nil(s.seen[pid])
  end)

  it("gives no CPU share across a pid's reuse by another process", function()
    local pid = spawn("exec sleep 60")
    local s = processes.sampler()
    s:sample({ pid })
    s.seen[pid].start = s.seen[pid].start - 1
    assert.is_nil(s:sample({ pid })[pid].cpu)
    assert.is_number(s:sample({ pid })[pid].cpu)
  end)

  it("keeps the stat files of the pids it samples open, and closes those not asked for again", function()
    local pid = spawn("exec sleep 60")
    local function kept()
      return tonumber(capture("ls -l /proc/" .. own_pid() .. "/fd | grep -c '/proc/" .. pid .. "/stat$'"))
    end
    local s = processes.sampler()
    s:sample({ pid })
    assert.equal(1, kept())
    s:sample({ pid })
    assert.equal(1, kept())
    s:sample({})
    assert.equal(0, kept())
  end)

  it("samples every process when given no pids", function()
    local all = assert(processes.sampler():sample())
    assert.is_table(all[own_pid()])
    assert.is_table(all[1])
  end)

  it("refuses pids that are not a list", function()
    local r, err = processes.sampler():sample(42)
    assert.is_nil(r)
    assert.equal("sample(pids): pids must be a list of pids or nil, not number", err)
  end)

  it("reads the load averages and the CPUs online", function()
    local sys = assert(processes.system())
    assert.is_true(sys.load1 >= 0 and sys.load5 >= 0 and sys.load15 >= 0)
    assert.equal(tonumber(capture("nproc --all")) >= sys.cpus and sys.cpus >= 1, true)
  end)
end)

describe("processes under a mapped proc root", function()
  local ID = string.rep("ab", 32)
  local dir, hz, page

  -- A stat line: utime, stime, threads, start and rss (pages) at their fields.
  local function stat(pid, comm, utime, stime, threads, started, rss)
    return string.format("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 %d 0 %d 1000 %d 0 0 0\n", pid,
      comm, pid, pid, utime, stime, threads, started, rss)
  end

  setup(function()
    hz = tonumber(capture("getconf CLK_TCK"))
    page = tonumber(capture("getconf PAGESIZE"))
    dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -m 700 " .. dir .. " " .. dir .. "/42 " .. dir .. "/43")
    files.write(dir .. "/42/stat", stat(42, "a) (b", 3 * hz, hz, 3, 1000 * hz, 50))
    files.write(dir .. "/42/cmdline", "nginx\0-g\0daemon off;\0")
    files.write(dir .. "/42/cgroup", "0::/system.slice/docker-" .. ID .. ".scope\n")
    files.write(dir .. "/42/status", "Name:\tnginx\nUid:\t1000\t33\t33\t33\nGid:\t0\t0\t0\t0\n")
    files.write(dir .. "/43/stat", "43 (broken) S 1\n")
    files.write(dir .. "/loadavg", "0.50 1.25 2.00 1/100 4242\n")
  end)

  teardown(function()
    proc_mapping.restore()
    if dir then os.execute("rm -rf " .. dir) end
  end)

  before_each(function() proc_mapping.set(dir) end)
  after_each(function() proc_mapping.restore() end)

  it("reads a stat line whose name holds spaces and parentheses, and leaves out a malformed one", function()
    local r = assert(processes.sampler():sample({ 42, 43 }))
    assert.is_nil(r[43])
    assert.same({ threads = 3, rss_bytes = 50 * page, comm = "a) (b" },
      { threads = r[42].threads, rss_bytes = r[42].rss_bytes, comm = r[42].comm })
  end)

  it("lists the processes of the mapped root with their cgroup, container and effective uid", function()
    local list = assert(processes.list())
    assert.equal(1, #list)
    local p = list[1]
    assert.same({ 42, "a) (b", "", "nginx -g daemon off;", "/system.slice/docker-" .. ID .. ".scope", ID, 33 },
      { p.pid, p.comm, p.exe, p.cmdline, p.cgroup, p.container_id, p.uid })
    assert.equal(p.start_time, processes.get(42).start_time)
    local uptime = tonumber(files.read("/proc/uptime"):match("^(%S+)"))
    local boot = os.time() - uptime
    assert.is_true(math.abs(p.start_time - (boot + 1000)) < 2, "start " .. p.start_time .. ", boot " .. boot)
  end)

  it("reads the load averages of the mapped root", function()
    local sys = assert(processes.system())
    assert.same({ 0.5, 1.25, 2 }, { sys.load1, sys.load5, sys.load15 })
  end)
end)
