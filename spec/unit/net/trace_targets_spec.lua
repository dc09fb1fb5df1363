-- net_trace_targets_spec.lua - the processes `trace -p` and `--comm`
-- follow: descendants found in /proc at the start, children forked later,
-- programs named by --comm exec'ed later, exits (seen, lost, or of a leader
-- thread while others run), pids reused, and the end of the trace.
local C = require("moonrover.consts")
local trace_targets = require("moonrover.net.trace_targets")

local FORK, EXEC, EXIT = C.MR_PROCESS_FORK, C.MR_PROCESS_EXEC, C.MR_PROCESS_EXIT

-- An nginx master (10) with two workers, a shell (20) with a child, init.
local PROCS = {
  { pid = 1, ppid = 0, comm = "init" },
  { pid = 10, ppid = 1, comm = "nginx" },
  { pid = 11, ppid = 10, comm = "nginx" },
  { pid = 12, ppid = 10, comm = "nginx" },
  { pid = 20, ppid = 1, comm = "sh" },
  { pid = 21, ppid = 20, comm = "curl" },
}

-- live: pid -> its start time (every pid of PROCS and a few more by default).
local function targets(opts, live)
  local calls = {}
  opts.set = function(pid, add)
    calls[#calls + 1] = (add and "+" or "-") .. pid
    return pid ~= 666 or nil
  end
  live = live or { [10] = 1, [11] = 1, [12] = 1, [13] = 1, [14] = 1, [40] = 1, [666] = 1 }
  opts.start_of = function(pid)
    return live[pid]
  end
  return trace_targets.new(opts), calls, live
end

describe("trace targets", function()
  it("finds the given processes' descendants in /proc", function()
    assert.same({ 10, 11, 12 }, trace_targets.initial({ pids = { 10 } }, PROCS))
    assert.same({ 11, 20, 21 }, trace_targets.initial({ pids = { 11, 20 } }, PROCS))
    assert.same({ 10, 11, 12 }, trace_targets.initial({ comm = "nginx" }, PROCS))
    assert.same({}, trace_targets.initial({ comm = "redis" }, PROCS))
  end)

  it("adds each process to the kernel's filter once, children forked later too", function()
    local t, calls = targets({ pids = { 10 } })
    t:follow({ 10, 11, 12 })
    t:follow({ 10 })
    t:on_process_event({ kind = FORK, pid = 13, ppid = 10 })
    t:on_process_event({ kind = FORK, pid = 14, ppid = 13 })
    t:on_process_event({ kind = FORK, pid = 30, ppid = 1 })
    assert.same({ "+10", "+11", "+12", "+13", "+14" }, calls)
    assert.equal(5, t.total)
  end)

  it("follows a process that execs the program named by --comm, not others", function()
    local t, calls = targets({ comm = "nginx" })
    t:on_process_event({ kind = EXEC, pid = 40, ppid = 1, comm = "nginx" })
    t:on_process_event({ kind = EXEC, pid = 41, ppid = 1, comm = "redis-server" })
    assert.same({ "+40" }, calls)
  end)

  it("removes a process at its exit and ends when all are gone", function()
    local t, calls, live = targets({ pids = { 10 } })
    t:follow({ 10, 11 })
    live[11] = nil
    t:on_process_event({ kind = EXIT, pid = 11 })
    assert.is_false(t:all_gone())
    live[10] = nil
    t:on_process_event({ kind = EXIT, pid = 10 })
    assert.is_true(t:all_gone())
    assert.same({ "+10", "+11", "-11", "-10" }, calls)
  end)

  it("keeps a process whose exit event came while it still runs (its leader thread exited)", function()
    local t, calls = targets({ pids = { 10 } })
    t:follow({ 10 })
    t:on_process_event({ kind = EXIT, pid = 10 })
    assert.is_false(t:all_gone())
    assert.same({ "+10" }, calls)
  end)

  it("finds at the sweep every process gone without an exit event, and pids reused since", function()
    local t, calls, live = targets({ pids = { 10 } })
    t:follow({ 10, 11, 12 })
    live[11], live[12] = nil, 99
    t:sweep()
    assert.same({ "+10", "+11", "+12", "-11", "-12" }, calls)
    assert.is_false(t:all_gone())
    live[10] = nil
    t:sweep()
    assert.is_true(t:all_gone())
  end)

  it("does not follow a process that exited before it was found, and takes it out of the filter", function()
    local t, calls = targets({ pids = { 10 } })
    t:follow({ 10 })
    t:on_process_event({ kind = FORK, pid = 51, ppid = 10 })
    assert.same({ "+10", "-51" }, calls)
    assert.equal(1, t.total)
  end)

  it("counts the processes the kernel's filter refused", function()
    local t = targets({ pids = { 10 } })
    t:follow({ 10, 666 })
    assert.same({ 1, 1 }, { t.total, t.not_followed })
  end)
end)
