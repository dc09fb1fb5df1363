-- End-to-end specs for the data plane (runtime/api.h, "event streams"): real
-- BPF programs, real processes and the getppid generator, consumed through
-- the FFI the way the agent's Lua side consumes them.
local bit = require("bit")
local e2e = require("support.e2e")
local lfs = require("lfs")
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

pcall(ffi.cdef, "struct pollfd { int fd; short events; short revents; };")
pcall(ffi.cdef, "int poll(struct pollfd *fds, unsigned long nfds, int timeout);")
pcall(ffi.cdef, "ssize_t read(int fd, void *buf, size_t count);")

local PROCESS, BENCH = lib.MR_STREAM_PROCESS, lib.MR_STREAM_BENCH
local EXEC, EXIT, FORK = lib.MR_PROCESS_EXEC, lib.MR_PROCESS_EXIT, lib.MR_PROCESS_FORK
local POLLIN = 1

-- Opens and starts a data plane with fields set on its options; with
-- bench_pid, one that also streams that process's getppid() calls.
local function open_plane(fields, bench_pid)
  local o = ffi.new("struct mr_data_plane_opts", fields or {})
  local d, err
  if bench_pid then
    d, err = rt.call(lib.mr_data_plane_open_bench, o, bench_pid)
  else
    d, err = rt.call(lib.mr_data_plane_open, o)
  end
  assert.is_not_nil(d, err)
  local ok, serr = rt.call(lib.mr_data_plane_start, d)
  assert.is_not_nil(ok, serr)
  return d
end

local function stats(d, stream)
  local s = ffi.new("struct mr_data_plane_stream_stats")
  lib.mr_data_plane_stream_stats(d, stream, s)
  return {
    received = tonumber(s.received), delivered = tonumber(s.delivered),
    dropped_queue = tonumber(s.dropped_queue), dropped_kernel = tonumber(s.dropped_kernel),
    queued = tonumber(s.queued),
  }
end

local function assert_consistent(s)
  assert.same(s.received, s.delivered + s.dropped_queue + s.queued)
end

-- Consumes everything queued on stream, calling fn(record) for each; returns how many.
local function consume(d, stream, ctype, fn)
  local base = ffi.cast(ctype, lib.mr_data_plane_storage(d, stream))
  local index = ffi.new("uint32_t[1]")
  local total = 0
  while true do
    local n = lib.mr_data_plane_peek(d, stream, 4096, index)
    if n == 0 then
      return total
    end
    for i = index[0], index[0] + n - 1 do
      fn(base[i])
    end
    lib.mr_data_plane_release(d, stream, n)
    total = total + n
  end
end

-- Copies the process events of the programs named in `mine` (a set of
-- comm values) into tables.
local function collect_process_events(d, into, mine)
  consume(d, PROCESS, "struct mr_process_event *", function(e)
    local comm = ffi.string(e.comm)
    if mine[comm] then
      into[#into + 1] = {
        kind = e.kind, pid = e.pid, ppid = e.ppid, exit_code = e.exit_code, uid = e.uid,
        comm = comm, ts_ns = e.ts_ns, start_ns = e.start_ns,
      }
    end
  end)
end

local function select_events(events, kind, comm)
  local out = {}
  for _, e in ipairs(events) do
    if e.kind == kind and (not comm or e.comm == comm) then
      out[#out + 1] = e
    end
  end
  return out
end

local function count_entries(dir)
  local n = 0
  for name in lfs.dir(dir) do
    if name ~= "." and name ~= ".." then
      n = n + 1
    end
  end
  return n
end

local function sleep(seconds)
  os.execute("sleep " .. seconds)
end

-- Waits (bounded) until cond() holds.
local function wait_for(cond, rounds)
  for _ = 1, rounds or 100 do
    if cond() then
      return true
    end
    sleep(0.05)
  end
  return cond()
end

-- Copies a program under a unique name, so that its events can be told apart.
local function install(dir, from, name)
  assert.same(0, (e2e.run("cp " .. from .. " " .. dir .. "/" .. name)))
  return dir .. "/" .. name
end

-- Starts the getppid generator stopped (so the BPF filter can name its pid
-- before it makes a call); returns its pid. resume() lets it run.
local generators = {}
local function spawn_generator_stopped(args)
  local gen = e2e.workloads .. "/getppid_loop " .. args
  local p = io.popen("sh -c 'kill -STOP $$; exec " .. gen .. "' >/dev/null 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  generators[#generators + 1] = pid
  assert.is_true(wait_for(function()
    local stat = e2e.read_all("/proc/" .. pid .. "/stat") or ""
    return stat:match("^%d+ %(.-%) T") ~= nil
  end), "the generator did not stop")
  return pid
end

local function resume(pid)
  os.execute("kill -CONT " .. pid)
end

describe("data plane (end to end)", function()
  local plane, dir

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    if plane then
      lib.mr_data_plane_close(plane)
      plane = nil
    end
    -- A generator left stopped by a failed spec only ends with SIGKILL.
    for i, pid in ipairs(generators) do
      os.execute("kill -KILL " .. pid .. " 2>/dev/null")
      generators[i] = nil
    end
    e2e.rmdir(dir)
  end)

  it("rejects bad options with one clear line", function()
    local o = ffi.new("struct mr_data_plane_opts", { flags = 8 })
    local d, err = rt.call(lib.mr_data_plane_open, o)
    assert.is_nil(d)
    assert.matches("unknown flags", err)
    d, err = rt.call(lib.mr_data_plane_open_bench, ffi.new("struct mr_data_plane_opts"), 0)
    assert.is_nil(d)
    assert.equal("the benchmark needs a process id, not 0", err)
  end)

  it("has no process stream when opened without it: nothing loaded, stored or counted", function()
    local d, err = rt.call(lib.mr_data_plane_open, ffi.new("struct mr_data_plane_opts",
      { flags = lib.MR_DATA_PLANE_NO_PROCESS }))
    assert.same({ nil, "invalid data plane options: without the process stream, only the network's" }, { d, err })
    plane = open_plane({ drain_ms = 5, flags = bit.bor(lib.MR_DATA_PLANE_NET, lib.MR_DATA_PLANE_NO_PROCESS) })
    assert.same(0, (e2e.run("/bin/true")))
    sleep(0.05)
    assert.is_true(lib.mr_data_plane_storage(plane, PROCESS) == nil)
    assert.same({ received = 0, delivered = 0, dropped_queue = 0, dropped_kernel = 0, queued = 0 },
      stats(plane, PROCESS))
  end)

  it("reports exec, fork and exit of each process with parent, name and exit status", function()
    local N = 50
    local names = { shell = e2e.own_name(dir, "mrsh"), truth = e2e.own_name(dir, "mrtrue"),
      exit3 = e2e.own_name(dir, "mrexit3") }
    local mine = { [names.shell] = true, [names.truth] = true, [names.exit3] = true }
    local shell = install(dir, "/bin/dash", names.shell)
    local truth = install(dir, "/bin/true", names.truth)
    local exit3 = install(dir, "/bin/dash", names.exit3)
    plane = open_plane({ drain_ms = 5 })
    local script = "i=0; while [ $i -lt " .. N .. " ]; do " .. truth .. "; i=$((i+1)); done; "
      .. exit3 .. " -c 'exit 3'; :"
    assert.same(0, (e2e.run(shell .. " -c " .. e2e.quote(script))))

    -- The notify eventfd becomes readable once a drain moved events.
    local pfd = ffi.new("struct pollfd[1]", { { fd = lib.mr_data_plane_notify_fd(plane), events = POLLIN } })
    assert.same(1, ffi.C.poll(pfd, 1, 5000))
    local count = ffi.new("uint64_t[1]")
    assert.same(8, tonumber(ffi.C.read(pfd[0].fd, count, 8)))
    assert.is_true(count[0] >= 1)

    local events = {}
    wait_for(function()
      collect_process_events(plane, events, mine)
      return #select_events(events, EXIT, names.shell) == 1
    end)
    sleep(0.05)
    collect_process_events(plane, events, mine)

    local shell_exec = select_events(events, EXEC, names.shell)
    assert.same(1, #shell_exec)
    local shell_pid = shell_exec[1].pid
    local execs = select_events(events, EXEC, names.truth)
    local exits = select_events(events, EXIT, names.truth)
    assert.same(N, #execs)
    assert.same(N, #exits)
    local exec_pids = {}
    for _, e in ipairs(execs) do
      assert.same(shell_pid, e.ppid)
      exec_pids[e.pid] = true
    end
    for _, e in ipairs(exits) do
      assert.same(0, e.exit_code)
      assert.same(shell_pid, e.ppid)
      assert.is_true(exec_pids[e.pid], "exit of a process that did not exec: " .. e.pid)
    end
    local exit3_exec = select_events(events, EXEC, names.exit3)
    local exit3_exit = select_events(events, EXIT, names.exit3)
    assert.same(1, #exit3_exec)
    assert.same(1, #exit3_exit)
    assert.same(3 * 256, exit3_exit[1].exit_code)
    assert.same(exit3_exec[1].pid, exit3_exit[1].pid)
    exec_pids[exit3_exec[1].pid] = true
    -- The shell forked one new process per command it ran, and nothing else.
    local forks = {}
    for _, e in ipairs(select_events(events, FORK)) do
      if e.ppid == shell_pid then
        assert.same(names.shell, e.comm)
        assert.is_true(exec_pids[e.pid], "fork without exec: " .. e.pid)
        forks[#forks + 1] = e
      end
    end
    assert.same(N + 1, #forks)
    for _, e in ipairs(events) do
      assert.same(0, e.uid)
      assert.is_true(e.start_ns <= e.ts_ns)
    end
    assert_consistent(stats(plane, PROCESS))
  end)

  it("drops what does not fit a full queue and counts it", function()
    local truth = install(dir, "/bin/true", "mrspec_true")
    plane = open_plane({ queue_capacity = 3, drain_ms = 5 })
    assert.same(0, (e2e.run("for i in 1 2 3 4 5 6 7 8 9 10; do " .. truth .. "; done")))
    assert.is_true(wait_for(function() return stats(plane, PROCESS).received >= 30 end))
    local s = stats(plane, PROCESS)
    assert.same(4, s.queued) -- 3 rounds up to 4
    assert.same(0, s.delivered)
    assert.is_true(s.dropped_queue > 0)
    assert_consistent(s)
    local index = ffi.new("uint32_t[1]")
    assert.same(4, lib.mr_data_plane_peek(plane, PROCESS, 100, index))
    assert.same(0, index[0])
    lib.mr_data_plane_release(plane, PROCESS, 4)
    s = stats(plane, PROCESS)
    assert.same(4, s.delivered)
    assert_consistent(s)
  end)

  it("delivers every benchmark event, in order, with increasing seq", function()
    local N = 20000
    local pid = spawn_generator_stopped("10 " .. N)
    plane = open_plane({ drain_ms = 5 }, pid)
    assert.same(ffi.sizeof("struct mr_bench_event"), lib.mr_data_plane_record_size(plane, BENCH))
    resume(pid)
    local seqs, tids_ok = {}, true
    assert.is_true(wait_for(function()
      consume(plane, BENCH, "struct mr_bench_event *", function(e)
        seqs[#seqs + 1] = tonumber(e.seq)
        tids_ok = tids_ok and e.pid == pid and e.tid == pid
      end)
      return #seqs >= N
    end), "events seen: " .. #seqs)
    assert.same(N, #seqs)
    assert.is_true(tids_ok)
    for i = 1, N do
      if seqs[i] ~= i - 1 then
        assert.same(i - 1, seqs[i])
      end
    end
    local s = stats(plane, BENCH)
    assert.same({ received = N, delivered = N, dropped_queue = 0, dropped_kernel = 0, queued = 0 }, s)
  end)

  it("drains in C: pops everything queued and returns how many", function()
    local N = 20000
    local pid = spawn_generator_stopped("10 " .. N)
    plane = open_plane({ drain_ms = 5 }, pid)
    resume(pid)
    local total = 0
    assert.is_true(wait_for(function()
      total = total + tonumber(lib.mr_data_plane_drain_in_c(plane, BENCH))
      return total >= N
    end))
    assert.same(N, total)
    local s = stats(plane, BENCH)
    assert.same(N, s.delivered)
    assert.same(0, s.queued)
  end)

  it("peeks the oldest contiguous run: the tail run first at the wrap, then the head", function()
    local pid = spawn_generator_stopped("0.5")
    plane = open_plane({ queue_capacity = 8, drain_ms = 1 }, pid)
    local base = ffi.cast("struct mr_bench_event *", lib.mr_data_plane_storage(plane, BENCH))
    local index = ffi.new("uint32_t[1]")
    local wrapped, ended_at_top, last_seq = 0, false, -1
    resume(pid)
    for _ = 1, 400 do
      local n = lib.mr_data_plane_peek(plane, BENCH, 3, index)
      assert.is_true(n <= 3 and index[0] + n <= 8)
      if n > 0 then
        if ended_at_top then
          assert.same(0, index[0])
          wrapped = wrapped + 1
        end
        for i = index[0], index[0] + n - 1 do
          local seq = tonumber(base[i].seq)
          assert.is_true(seq > last_seq)
          last_seq = seq
        end
        ended_at_top = index[0] + n == 8
        lib.mr_data_plane_release(plane, BENCH, n)
      end
      lib.mr_sys_sleep_ms(1)
    end
    assert.is_true(wrapped > 0, "the queue never wrapped")
    local s = stats(plane, BENCH)
    assert.is_true(s.dropped_queue > 0)
    assert_consistent(s)
  end)

  it("releases every fd and thread it used on close", function()
    local fds, tasks = count_entries("/proc/self/fd"), count_entries("/proc/self/task")
    local pid = spawn_generator_stopped("10 1000")
    local d = open_plane({}, pid)
    assert.is_true(count_entries("/proc/self/fd") > fds)
    assert.same(tasks + 1, count_entries("/proc/self/task"))
    resume(pid)
    assert.is_true(wait_for(function() return stats(d, BENCH).received == 1000 end))
    lib.mr_data_plane_close(d)
    assert.same(fds, count_entries("/proc/self/fd"))
    assert.same(tasks, count_entries("/proc/self/task"))
  end)
end)
