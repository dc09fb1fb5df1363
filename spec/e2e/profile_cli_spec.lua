-- End-to-end specs for what a user of `moonrover profile` types and sees:
-- the option forms perf users type, `help profile`, the live status line on a
-- terminal (and none elsewhere), the off-CPU -F warning, per-thread stacks of
-- a workload with named threads, and what `go tool pprof` shows of the
-- process, the threads and a whole-system profile's main binary. Profiles
-- here walk user stacks by frame pointers (--unwind fp; the workloads have
-- them): these specs are about the command line, not the unwinder, and that
-- keeps each run's program load short.
local e2e = require("support.e2e")
local profile_e2e = require("support.profile_e2e")
local folded = require("moonrover.profiler.writers.folded")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local THREAD_NAMES = { "mr_alpha", "mr_beta", "mr_gamma" }

-- The status lines a terminal was sent: the text after each "\r\27[K".
local function status_lines(text)
  local lines = {}
  for line in text:gmatch("\r\27%[K(profiling[^\r\n]*)") do
    lines[#lines + 1] = line
  end
  return lines
end

-- The thread frames of a per-thread folded profile, one per stack: { tid,
-- name (nil for a bare `tid-N`), process (the process frame it sits on) }.
local function tid_frames(text)
  local list = {}
  for _, s in ipairs(folded.parse(text)) do
    local frame = s.frames[1] or ""
    local tid = frame:match("^tid%-(%d+)")
    if tid then
      list[#list + 1] = { tid = tid, name = frame:match("^tid%-%d+ %((.*)%)$"), process = s.comm }
    end
  end
  return list
end

-- The named thread frames of a per-thread folded profile, by thread name,
-- with the process frame each sits on.
local function thread_frames(text)
  local threads = {}
  for _, f in ipairs(tid_frames(text)) do
    if f.name then
      threads[f.name] = { tid = tonumber(f.tid), process = f.process }
    end
  end
  return threads
end

-- The names each thread id of a per-thread folded profile is shown with ("" for
-- a bare `tid-N`), as a set per tid.
local function names_by_tid(text)
  local tids = {}
  for _, f in ipairs(tid_frames(text)) do
    tids[f.tid] = tids[f.tid] or {}
    tids[f.tid][f.name or ""] = true
  end
  return tids
end

-- The ids of pid's threads but the main one, from /proc/PID/task, as a set.
local function thread_ids(pid)
  local code, out = e2e.run("ls /proc/" .. pid .. "/task")
  assert.same(0, code)
  local ids = {}
  for id in out:gmatch("%d+") do
    if tonumber(id) ~= pid then
      ids[tonumber(id)] = true
    end
  end
  return ids
end

describe("moonrover profile's command line (end to end)", function()
  local run = profile_e2e.each_test(before_each, after_each)

  local function pprof(args, file)
    local code, out, err = run:pprof(args, file)
    assert.same(0, code, err)
    return out
  end

  it("takes -F99 -p<pid> -d1, -d 2s, --opt=value and formats in any case", function()
    local pid = run:spawn("cpu_ratio", "60")
    local out = run.dir .. "/a.out"
    local code, stdout, stderr = e2e.moonrover({ "profile", "-F99", "-p" .. pid, "-d1", "--unwind=fp", "-f", "Folded",
      "-o", out })
    assert.same(0, code, stderr)
    assert.matches("duration: 1%.0 s", stdout)
    assert.matches("burn_alpha", e2e.read_all(out))
    code, stdout, stderr = e2e.moonrover({ "profile", "--pid=" .. pid, "-d", "2s", "--frequency=49", "--unwind", "fp",
      "--format=SVG", "--output=" .. run.dir .. "/b.out" })
    assert.same(0, code, stderr)
    assert.matches("duration: 2%.0 s", stdout)
    assert.matches("^<%?xml", e2e.read_all(run.dir .. "/b.out"))
  end)

  it("prints profile --help for 'help profile'", function()
    local code, help = e2e.moonrover({ "help", "profile" })
    local _, direct = e2e.moonrover({ "profile", "--help" })
    assert.same(0, code)
    assert.same(direct, help)
    assert.matches("%-%-per%-thread", help)
  end)

  it("shows a status line updating on a terminal, and none when stderr is a file", function()
    local pid = run:spawn("cpu_ratio", "60")
    local command = string.format("%s profile -p %d -d 3s --unwind fp -o %s", e2e.quote(e2e.bin), pid,
      e2e.quote(run.dir .. "/tty.folded"))
    local code, stdout, stderr = e2e.run("script -q -e -c " .. e2e.quote(command) .. " /dev/null")
    assert.same(0, code, stderr)
    local lines = status_lines(stdout)
    assert(#lines >= 2, "expected two status lines or more, saw: " .. stdout)
    for _, line in ipairs(lines) do
      assert.matches("^profiling %d+%.%d s / 3%.0 s   samples [%d,]+   lost [%d,]+   processes %d+$", line)
    end
    assert.are_not.equal(lines[1], lines[#lines])
    assert.matches("\r\27%[Kmoonrover profile %(on%-CPU%)", stdout, 1)
    code, stdout, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "2", "--unwind", "fp", "-o",
      run.dir .. "/file.folded" })
    assert.same(0, code, stderr)
    assert.same("", stderr)
    assert.is_nil(stdout:find("\r", 1, true), stdout)
  end)

  it("warns in one line that -F does not apply to an off-CPU profile", function()
    local pid = run:spawn("sleeper", "60")
    local code, _, stderr = e2e.moonrover({ "profile", "--off-cpu", "-F", "999", "-p", tostring(pid), "-d", "1",
      "--unwind", "fp", "-o", run.dir .. "/off.folded" })
    assert.same(0, code, stderr)
    assert.same("moonrover profile: --frequency does not apply to off-CPU profiles " ..
      "(they weigh blocked time, not samples): ignored\n", stderr)
  end)

  it("puts each named thread's frame below the process in a --per-thread folded profile", function()
    local pid = run:spawn("named_threads", "60")
    local out = run.dir .. "/threads.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "2", "--per-thread", "--no-kernel",
      "--unwind", "fp", "-o", out })
    assert.same(0, code, stderr)
    local threads, ids = thread_frames(e2e.read_all(out)), thread_ids(pid)
    for _, name in ipairs(THREAD_NAMES) do
      assert(threads[name], "no frame of thread " .. name .. " in:\n" .. e2e.read_all(out))
      assert.same("named_threads", threads[name].process)
      assert(ids[threads[name].tid], "not one of the process's threads: " .. threads[name].tid)
    end
    code = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "1", "--no-kernel", "--unwind", "fp", "-o",
      run.dir .. "/whole.folded" })
    assert.same(0, code)
    assert.same({}, thread_frames(e2e.read_all(run.dir .. "/whole.folded")))
  end)

  it("names a thread alike in every drain, after it has exited too", function()
    -- The threads spin 4 s and exit with the process: the first drain (2 s)
    -- reads their names, the last ones come after they are gone.
    local pid = run:spawn("named_threads", "4")
    local out = run.dir .. "/exited.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "20", "--per-thread",
      "--no-kernel", "--unwind", "fp", "-o", out })
    assert.same(0, code, stderr)
    for tid, names in pairs(names_by_tid(e2e.read_all(out))) do
      local list = {}
      for name in pairs(names) do
        list[#list + 1] = name == "" and "(none)" or name
      end
      assert(#list == 1, "thread " .. tid .. " shown as " .. table.concat(list, ", ") .. " in:\n" .. e2e.read_all(out))
    end
  end)

  it("labels pprof samples with their thread, and lists no process as a function", function()
    local pid = run:spawn("named_threads", "60")
    local out = run.dir .. "/threads.pb.gz"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "2", "--per-thread", "--unwind",
      "fp", "-o", out })
    assert.same(0, code, stderr)
    local tags = pprof("-tags", out)
    assert.matches(" thread: Total", tags, 1, true)
    for _, name in ipairs(THREAD_NAMES) do
      assert.matches("%): " .. name .. "\n", tags)
    end
    local top = pprof("-top", out)
    assert.matches("File: named_threads\n", top, 1, true)
    assert.matches("spin_in_thread\n", top, 1, true)
    assert.is_nil(top:find("%%%s+named_threads\n"), top)
  end)

  it("names a whole-system pprof's main binary for what it is", function()
    run:spawn("cpu_ratio", "60")
    local out = run.dir .. "/all.pb.gz"
    local code, _, stderr = e2e.moonrover({ "profile", "-d", "1", "--unwind", "fp", "-o", out })
    assert.same(0, code, stderr)
    assert.matches("File: moonrover whole-system profile\n", pprof("-top", out), 1, true)
  end)
end)
