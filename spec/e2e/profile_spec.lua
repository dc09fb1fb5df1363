-- End-to-end specs for `moonrover profile` and `moonrover check`: real BPF,
-- real workloads, real output files read back by real readers.
local e2e = require("support.e2e")
local profile_e2e = require("support.profile_e2e")
local folded = require("moonrover.profiler.writers.folded")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- How many samples the 3:1 check needs. cpu_ratio splits its own CPU time
-- 3:1 between burn_alpha and burn_beta, and cpu-clock samples a task only
-- while it runs (999 Hz on each CPU), so a sample of the two lands in alpha
-- with probability p = 3/4. Counted as independent draws, alpha's samples
-- out of N are binomial; timer-driven samples are more regular than that,
-- which only narrows the spread, so the binomial bound is a safe one. The
-- check accepts alpha:beta in [2.7, 3.3], an alpha share in [0.7297, 0.7674],
-- whose nearer edge is d = 0.0174 from p. For a false failure at most once in
-- 10,000 runs (z = 3.89, normal approximation), z * sqrt(p (1 - p) / N) <= d
-- needs N >= z^2 p (1 - p) / d^2 = 9327 samples: 10 s of the workload's CPU.
-- Sharing the CPU does not move the share, it slows the count (the workload
-- ran a fifth of the time beside two busy loops and another build), so the
-- spec profiles until it has N. It stops on the count, never on the split,
-- which leaves the share unbiased.
local RATIO, RATIO_LOW, RATIO_HIGH = 3, 2.7, 3.3
local Z = 3.89 -- two-sided normal quantile for a 1e-4 chance of a false failure
local SHARE = RATIO / (RATIO + 1)
local MARGIN = math.min(SHARE - RATIO_LOW / (RATIO_LOW + 1), RATIO_HIGH / (RATIO_HIGH + 1) - SHARE)
local MIN_SAMPLES = math.ceil(Z * Z * SHARE * (1 - SHARE) / MARGIN ^ 2)
local FREQUENCY = 999
local PROFILE_BUDGET_S = 120 -- profiling time allowed for MIN_SAMPLES on a busy machine

-- Sums a folded profile's values by leaf function and notes every frame seen.
local function by_leaf(text)
  local leaves, seen = {}, {}
  for _, s in ipairs(folded.parse(text)) do
    local leaf = s.frames[#s.frames]
    if leaf then
      leaves[leaf] = (leaves[leaf] or 0) + s.count
    end
    for _, f in ipairs(s.frames) do
      seen[f] = true
    end
  end
  return leaves, seen
end

-- Seconds of profiling that should bring the burn samples from have up to
-- MIN_SAMPLES: at the full rate at first, then at the rate seen so far.
local function round_seconds(have, spent)
  local rate = spent > 0 and math.max(have / spent, 1) or FREQUENCY
  return math.min(math.max(1, math.ceil((MIN_SAMPLES - have) / rate)), PROFILE_BUDGET_S - spent)
end

describe("moonrover profile (end to end)", function()
  local run = profile_e2e.each_test(before_each, after_each)

  -- One on-CPU profile of pid, user frames only, into out; its sums by leaf
  -- and the frames seen.
  local function profile_round(pid, seconds, out)
    local code, stdout, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", tostring(seconds),
      "-F", tostring(FREQUENCY), "--no-kernel", "-o", out })
    assert.same(0, code, stderr)
    assert.matches("samples", stdout)
    return by_leaf(e2e.read_all(out))
  end

  -- Profiles pid in rounds until burn_alpha and burn_beta have MIN_SAMPLES
  -- between them or the budget is spent; returns their sums, whether main was
  -- on the stacks, and the seconds spent.
  local function profile_burns(pid)
    local sums, saw_main, spent, have = { burn_alpha = 0, burn_beta = 0 }, false, 0, 0
    while have < MIN_SAMPLES and spent < PROFILE_BUDGET_S do
      local seconds = round_seconds(have, spent)
      local leaves, seen = profile_round(pid, seconds, run.dir .. "/ratio.folded")
      for name in pairs(sums) do
        sums[name] = sums[name] + (leaves[name] or 0)
      end
      saw_main, spent = saw_main or seen.main == true, spent + seconds
      have = sums.burn_alpha + sums.burn_beta
    end
    return sums, saw_main, spent
  end

  it("shows the 3:1 CPU ratio of two known functions, both named", function()
    local pid = run:spawn("cpu_ratio", tostring(2 * PROFILE_BUDGET_S))
    local sums, saw_main, spent = profile_burns(pid)
    assert.is_true(saw_main, "main should be on the stacks")
    local alpha, beta = sums.burn_alpha, sums.burn_beta
    assert.is_true(alpha > 0, "burn_alpha missing")
    assert.is_true(beta > 0, "burn_beta missing")
    assert.is_true(alpha + beta >= MIN_SAMPLES, string.format("only %d samples of burn_alpha and " ..
      "burn_beta in %d s of profiling; the ratio's bound needs %d: the workload hardly ran", alpha + beta,
      spent, MIN_SAMPLES))
    local ratio = alpha / beta
    assert.is_true(ratio > RATIO_LOW and ratio < RATIO_HIGH,
      string.format("alpha:beta = %d:%d = %.3f", alpha, beta, ratio))
  end)

  it("names a caller whose call never returns by the call, not by the next function", function()
    local pid = run:spawn("noreturn_caller", "30")
    local out = run.dir .. "/noreturn.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "1", "--no-kernel", "-o", out })
    assert.same(0, code, stderr)
    local text = e2e.read_all(out)
    assert.matches("main;caller_a;die_here ", text, 1, true)
    assert.is_nil(text:find("caller_b", 1, true), text)
  end)

  it("counts nothing past its duration, however late it gets to stop", function()
    local pid = run:spawn("cpu_ratio", "30")
    local out = run.dir .. "/late.folded"
    -- moonrover is stopped for 3 s in the middle of a 2 s profile, as a long
    -- drain or a paused virtual machine would hold it; the kernel samples on
    local script = string.format("%s profile -p %d -d 2 -F 99 --no-kernel -o %s & m=$!; sleep 0.5; "
      .. "kill -STOP $m; sleep 3; kill -CONT $m; wait $m", e2e.quote(e2e.bin), pid, e2e.quote(out))
    local code, stdout, stderr = e2e.run("sh -c " .. e2e.quote(script))
    assert.same(0, code, stderr)
    local taken = tonumber((stdout:match("samples taken: ([%d,]+)") or ""):gsub(",", ""), 10)
    -- one thread sampled at 99 Hz for 2 s: 198, and a little for timer slack
    assert.is_true(taken and taken <= 2 * 99 * 1.05, stdout)
    assert.matches("duration: 2.0 s", stdout, 1, true)
  end)

  it("loses nothing when it starts, however many new stacks arrive at once", function()
    for _ = 1, 5 do
      local code, stdout, stderr = e2e.moonrover({ "profile", "-d", "1", "-F", "999", "-o",
        run.dir .. "/start.folded" })
      assert.same(0, code, stderr)
      assert.matches("samples lost: none\n", stdout, 1, true)
    end
  end)

  it("finds the function an off-CPU workload sleeps in", function()
    local pid = run:spawn("sleeper", "30")
    local out = run.dir .. "/off.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "--off-cpu", "-p", tostring(pid), "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local text = e2e.read_all(out)
    assert.matches("nap_in_known_function", text)
    local leaves, seen = by_leaf(text)
    assert.is_true(seen.main)
    -- the stacks are taken inside the tracepoint the program runs in: none of
    -- its machinery may remain at the leaf, where the thread blocked
    for leaf in pairs(leaves) do
      assert.is_nil(leaf:match("^_*bpf") or leaf:match("^_*trace") or leaf:match("^perf_"), leaf)
    end
    assert.truthy(leaves.__schedule or leaves.schedule, text)
    local blocked = 0
    for _, s in ipairs(folded.parse(text)) do
      for _, f in ipairs(s.frames) do
        if f == "nap_in_known_function" then
          blocked = blocked + s.count
        end
      end
    end
    assert.is_true(blocked > 0)
  end)

  it("writes pprof that go tool pprof reads, with the hot functions", function()
    local pid = run:spawn("cpu_ratio", "30")
    local out = run.dir .. "/cpu.pb.gz"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local rc, top, err = run:pprof("-top", out)
    assert.same(0, rc, err)
    assert.matches("burn_alpha", top)
    assert.matches("burn_beta", top)
    -- the main binary pprof names is the profiled program, not the kernel
    assert.matches("File: cpu_ratio\n", top, 1, true)
  end)

  it("profiles every process into an SVG flame graph by default extension", function()
    run:spawn("cpu_ratio", "30")
    local out = run.dir .. "/all.svg"
    local code, stdout, stderr = e2e.moonrover({ "profile", "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local svg = e2e.read_all(out)
    assert.matches("^<%?xml", svg)
    assert.matches("<svg", svg)
    assert.matches("burn_alpha", svg)
    assert.matches("processes", stdout)
  end)

  it("names the frames of a process that exits during the profile", function()
    local pid = run:spawn("cpu_ratio", "1")
    local out = run.dir .. "/exit.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "3", "-o", out })
    assert.same(0, code, stderr)
    local leaves = by_leaf(e2e.read_all(out))
    assert.is_truthy(leaves.burn_alpha, "frames of the exited process should be named")
  end)

  it("keeps kernel frames unless --no-kernel", function()
    local pid = run:spawn("sleeper", "30")
    local with, without = run.dir .. "/k.folded", run.dir .. "/nok.folded"
    assert.same(0, (e2e.moonrover({ "profile", "--off-cpu", "-p", tostring(pid), "-d", "1", "-o", with })))
    assert.same(0, (e2e.moonrover({ "profile", "--off-cpu", "--no-kernel", "-p", tostring(pid), "-d", "1",
      "-o", without })))
    assert.matches("_%[k%]", e2e.read_all(with))
    assert.not_matches("_%[k%]", e2e.read_all(without))
  end)

  it("fails with one clear line for an unknown pid or an unwritable output", function()
    local code, _, stderr = e2e.moonrover({ "profile", "-p", "4000000", "-d", "1", "-o", run.dir .. "/x.svg" })
    assert.same(1, code)
    assert.same("moonrover profile: no process with pid 4000000\n", stderr)
    code, _, stderr = e2e.moonrover({ "profile", "-d", "1", "-o", "/proc/nonexistent/x.svg" })
    assert.same(1, code)
    assert.matches("^moonrover profile: cannot write /proc/nonexistent/x.svg", stderr)
    assert.same(1, select(2, stderr:gsub("\n", "")))
  end)

  it("refuses an output that is another user's link in /tmp, in every format, touching neither", function()
    local tmp, victim = run.dir .. "/tmp", run.dir .. "/victim"
    assert.same(0, (e2e.run("mkdir -m 1777 " .. tmp)))
    require("support.files").write(victim, "precious\n")
    for _, name in ipairs({ "link.folded", "link.svg", "link.pb.gz" }) do
      local link = tmp .. "/" .. name
      assert.same(0, (e2e.run("ln -s " .. victim .. " " .. link .. " && chown -h nobody " .. link)))
      local code, stdout, stderr = e2e.moonrover({ "profile", "-d", "1", "-o", link })
      assert.same(1, code, stdout)
      assert.same("moonrover profile: cannot write " .. link .. ": it is a symbolic link, and outputs are never " ..
        "written through a link nor put in its place (name the file itself, or - for standard output)\n", stderr)
      assert.same(victim .. "\n", select(2, e2e.run("readlink " .. link)))
    end
    assert.same("precious\n", e2e.read_all(victim))
  end)

  it("writes every format to standard output with -o -", function()
    local pid = run:spawn("cpu_ratio", "30")
    for _, case in ipairs({ { "pprof", "gunzip -c | head -c 2 | od -An -tx1", " 0a %x%x" },
      { "svg", "head -c 5", "<?xml" }, { "folded", "tail -n 1", "^cpu_ratio;[^\n]* %d+\n$" } }) do
      local format, filter, expect = case[1], case[2], case[3]
      local script = string.format("%s profile -p %d -d 1 -f %s -o - 2>/dev/null | %s", e2e.quote(e2e.bin), pid,
        format, filter)
      local code, stdout = e2e.run("sh -c " .. e2e.quote(script))
      assert.same(0, code)
      assert.matches(expect, stdout, 1, format == "svg")
    end
    assert.is_nil(io.open("-"), "no file named '-' is written")
  end)

  it("reports a full disk as an error naming where it wrote, and leaves no partial file, in every format", function()
    local full = run.dir .. "/full"
    -- one page, filled: however small a profile is, it does not fit
    e2e.run("mkdir " .. full .. " && mount -t tmpfs -o size=4k tmpfs " .. full
      .. " && dd if=/dev/zero of=" .. full .. "/filler bs=4096 count=1")
    -- a busy process: a quiet machine can give a 1 s profile no sample, and
    -- an empty file fits on a full disk
    local pid = run:spawn("cpu_ratio", "30")
    for _, name in ipairs({ "p.svg", "p.folded", "p.pb.gz" }) do
      local code, stdout, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "1", "-o",
        full .. "/" .. name })
      assert.same(1, code, stdout)
      assert.same("moonrover profile: cannot write " .. full .. "/" .. name, stderr:match("^(.-):[^:]*\n$")
        :gsub(": writing pprof$", ""))
      assert.matches("No space left on device %(written first to an unnamed temporary file in " ..
        full:gsub("%p", "%%%0") .. "%)\n$", stderr)
      assert.is_nil(stdout:find("output:", 1, true))
    end
    local _, left = e2e.run("ls -A " .. full)
    e2e.run("umount " .. full)
    assert.same("filler\n", left)
  end)

  it("says when the profiled processes exit early, and stops then", function()
    local pid = run:spawn("cpu_ratio", "1")
    local code, stdout, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "30", "-o",
      run.dir .. "/e.folded" })
    assert.same(0, code, stderr)
    local gone = tonumber(stdout:match("the profiled processes exited ([%d.]+) s into the profile: stopped then\n"))
    assert.is_true(gone and gone < 10, stdout)
  end)

  it("says why an off-CPU profile of a busy loop is empty", function()
    local pid = run:spawn("noreturn_caller", "30")
    local code, stdout, stderr = e2e.moonrover({ "profile", "--off-cpu", "-p", tostring(pid), "-d", "1",
      "-o", run.dir .. "/busy.folded" })
    assert.same(0, code, stderr)
    assert.matches("no samples were taken: no profiled thread blocked during the profile\n", stdout, 1, true)
  end)

  it("treats a stray argument, an unknown format and -v as the command line says", function()
    local code, stdout, stderr = e2e.moonrover({ "profile", "extra", "-o", run.dir .. "/stray.svg" })
    assert.same(2, code)
    assert.same("", stdout)
    assert.matches("^moonrover profile: unexpected argument 'extra'", stderr)
    assert.is_nil(io.open(run.dir .. "/stray.svg"))
    code, stdout, stderr = e2e.moonrover({ "profile", "-d", "1", "-o", run.dir .. "/x.png" })
    assert.same(2, code)
    assert.same("", stdout)
    assert.matches("use %-%-format folded|pprof|svg\n$", stderr)
    code, stdout = e2e.moonrover({ "-v" })
    assert.same(0, code)
    assert.matches("^moonrover %d+%.%d+%.%d+", stdout)
  end)

  it("tells a user without privileges to run it as root", function()
    local env, bin = e2e.public_copy(run.dir)
    local code, stdout, stderr = e2e.run(env .. "setpriv --reuid=nobody --regid=nogroup --clear-groups " ..
      bin .. " profile -d 1 -o /tmp/never.svg")
    assert.same(1, code, stderr)
    assert.same("", stdout)
    assert.matches("^moonrover profile: profiling needs root %(or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE", stderr)
    assert.same(1, select(2, stderr:gsub("\n", "")))
    code, stdout = e2e.run(env .. "setpriv --reuid=nobody --regid=nogroup --clear-groups " .. bin .. " check")
    assert.same(1, code)
    assert.is_nil(stdout:find("is not mounted", 1, true), stdout)
    assert.is_nil(stdout:find("Linux 5.", 1, true), "no kernel advice for a permission problem:\n" .. stdout)
    assert.matches("could not be tried by this user: moonrover needs root %(or CAP_BPF, CAP_PERFMON", stdout)
  end)
end)

describe("the profiler object (end to end)", function()
  local profiler = require("moonrover.profiler.profiler")
  local rt = require("moonrover.rt")

  -- The pids of the samples named comm in prof, and whether one of their
  -- frames is named fn.
  local function pids_of(prof, comm, fn)
    local lib, ffi = rt.lib, rt.ffi
    local samples, stack, frames = lib.mr_profile_samples(prof), lib.mr_profile_stack_frames(prof),
      lib.mr_profile_frames(prof)
    local pids, named = {}, false
    for i = 0, tonumber(lib.mr_profile_sample_count(prof)) - 1 do
      local sm = samples[i]
      if ffi.string(lib.mr_profile_string(prof, sm.comm)) == comm then
        pids[sm.pid] = true
        for j = 0, sm.depth - 1 do
          local f = frames[stack[sm.first + j]]
          named = named or ffi.string(lib.mr_profile_string(prof, f.name)) == fn
        end
      end
    end
    return pids, named
  end

  it("names short-lived processes and forgets each once its samples are drained", function()
    local churn = e2e.spawn("churn", "100 3 3")
    local p = assert(profiler.open({ frequency = 499, kernel = false }))
    assert(p:start())
    -- 6 s: the churn, then drains enough to forget it all (a poll returns
    -- early when notices arrive, so time the drains by the clock)
    local clock = rt.lib.mr_sys_monotonic_ns
    local next_drain, stop_at = clock() + 5e8, clock() + 6e9
    while clock() < stop_at do
      p:poll(100)
      if clock() >= next_drain then
        assert(p:drain())
        next_drain = clock() + 5e8
      end
    end
    p:stop()
    assert(p:drain())
    e2e.kill(churn)
    local pids, named = pids_of(p.profile, "churn", "churn_child_work")
    local n = 0
    for _ in pairs(pids) do
      n = n + 1
    end
    local s = p:stats()
    p:close()
    assert.is_true(n >= 10, "churn processes sampled: " .. n)
    assert.is_true(named, "churn_child_work is named")
    assert.is_true(s.processes - s.tracked >= n - 1,
      ("seen %d, still tracked %d, churn processes %d"):format(s.processes, s.tracked, n))
  end)

  it("releases every file descriptor when closed", function()
    local function open_fds()
      local n = 0
      for _ in require("lfs").dir("/proc/self/fd") do
        n = n + 1
      end
      return n
    end
    local before = open_fds()
    for _, off_cpu in ipairs({ false, true, false }) do
      local p = assert(profiler.open({ frequency = 99, off_cpu = off_cpu, kernel = true }))
      assert(p:start())
      p:poll(50)
      assert(p:drain())
      p:stop()
      p:close()
    end
    collectgarbage()
    assert.same(before, open_fds())
  end)
end)

describe("moonrover check / version / help (end to end)", function()
  it("reports every feature and passes on this machine", function()
    local code, stdout = e2e.moonrover({ "check" })
    assert.same(0, code, stdout)
    for _, f in ipairs({ "root", "btf", "perf_event", "tracepoint", "tp_btf", "uprobe", "ringbuf", "kallsyms" }) do
      assert.matches("ok    " .. f, stdout)
    end
  end)

  it("prints the version and each command's help", function()
    local code, stdout = e2e.moonrover({ "version" })
    assert.same(0, code)
    assert.matches("^moonrover %d+%.%d+%.%d+", stdout)
    code, stdout = e2e.moonrover({ "profile", "--help" })
    assert.same(0, code)
    local options = { "--pid", "--duration", "--frequency", "--off-cpu", "--output", "--format", "--no-kernel" }
    for _, opt in ipairs(options) do
      assert.matches(opt:gsub("%-", "%%-"), stdout)
    end
    code = e2e.moonrover({ "frobnicate" })
    assert.same(2, code)
  end)
end)
