-- unwind_spec.lua - user stacks of code without frame pointers, end to end:
-- the frameless workload (-O2 -fomit-frame-pointer, calling into Debian's
-- libc; and a build of it whose CFI is only in .debug_frame) profiled on-CPU
-- and off-CPU with --unwind cfi gives whole chains,
-- where --unwind fp loses the callers of its frameless functions.
local C = require("moonrover.consts")
local e2e = require("support.e2e")
local profile_e2e = require("support.profile_e2e")
local folded = require("moonrover.profiler.writers.folded")
local profiler = require("moonrover.profiler.profiler")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The user frames of each stack whose leaf user frame is leaf, with counts:
-- { {frames = "main;flock_loop;kestrel_spin", count = n}, ... }.
local function chains_to(text, leaf)
  local out = {}
  for _, s in ipairs(folded.parse(text)) do
    local user = {}
    for i, f in ipairs(s.frames) do
      if s.kinds[i] == "user" then user[#user + 1] = f end
    end
    if user[#user] == leaf then
      out[#out + 1] = { frames = table.concat(user, ";"), count = s.count }
    end
  end
  return out
end

-- Share of the counts whose chain ends with tail.
local function share_ending(chains, tail)
  local hit, all = 0, 0
  for _, c in ipairs(chains) do
    all = all + c.count
    if c.frames:sub(-#tail) == tail then hit = hit + c.count end
  end
  return all > 0 and hit / all or 0, all
end

describe("CFI unwinding (end to end)", function()
  local run = profile_e2e.each_test(before_each, after_each)

  local function profile(pid, extra)
    local out = run.dir .. "/p.folded"
    local words = { "profile", "-p", tostring(pid), "-d", "2", "-F", "999", "-o", out }
    for _, w in ipairs(extra) do words[#words + 1] = w end
    local code, stdout, stderr = e2e.moonrover(words)
    assert.same(0, code, stderr)
    return e2e.read_all(out), stdout
  end

  -- program: the frameless workload's build (default "frameless")
  local function spawn(mode, program)
    return run:spawn(program or "frameless", mode .. " 30")
  end

  it("keeps the caller of a frameless leaf on-CPU, down to libc's start", function()
    local text, stdout = profile(spawn("cpu"), { "--unwind", "cfi", "--no-kernel" })
    local share, n = share_ending(chains_to(text, "kestrel_spin"), "main;flock_loop;kestrel_spin")
    assert.is_true(n > 0, "no kestrel_spin samples:\n" .. text)
    assert.equals(1, share, text)
    assert.matches("__libc_start_call_main;main;flock_loop;kestrel_spin", text)
    assert.matches("user stacks: [%d,]+ by CFI tables", stdout)
  end)

  it("keeps the caller of a frameless leaf whose CFI is only in .debug_frame", function()
    local text = profile(spawn("cpu", "frameless_debug_frame"), { "--unwind", "cfi", "--no-kernel" })
    local share, n = share_ending(chains_to(text, "kestrel_spin"), "main;flock_loop;kestrel_spin")
    assert.is_true(n > 0, "no kestrel_spin samples:\n" .. text)
    assert.equals(1, share, text)
  end)

  it("unwinds from the vDSO through Debian's libc to the frameless caller", function()
    local text = profile(spawn("clock"), { "--unwind", "cfi", "--no-kernel" })
    local chains = chains_to(text, "clock_gettime")
    -- libc's clock_gettime calls the vDSO's, which has the same name
    local through_vdso = share_ending(chains, "main;grebe_poll;clock_gettime;clock_gettime")
    assert.is_true(through_vdso > 0, text)
    for _, c in ipairs(chains) do
      assert.matches("^_start;__libc_start_main;__libc_start_call_main;main;grebe_poll;clock_gettime", c.frames)
    end
  end)

  it("keeps the caller of a libc function off-CPU", function()
    local text = profile(spawn("sleep"), { "--unwind", "cfi", "--off-cpu" })
    local chains = chains_to(text, "clock_nanosleep")
    local share, n = share_ending(chains, "main;flock_loop;heron_wait;clock_nanosleep")
    assert.is_true(n > 0, "no clock_nanosleep stacks:\n" .. text)
    assert.equals(1, share, text)
  end)

  it("unwinds through a signal frame back to the interrupted code", function()
    local text = profile(spawn("signal"), { "--unwind", "cfi", "--no-kernel" })
    local chains = chains_to(text, "kestrel_spin")
    assert.is_true(#chains > 0, "no kestrel_spin samples:\n" .. text)
    for _, c in ipairs(chains) do
      assert.matches("^_start;__libc_start_main;__libc_start_call_main;main;flock_loop;.*osprey_signal;kestrel_spin$",
        c.frames)
    end
  end)

  it("walks MR_MAX_STACK_DEPTH frames of a stack deeper than that, and says how many were cut", function()
    local text, stdout = profile(spawn("deep"), { "--unwind", "cfi", "--no-kernel" })
    local chains = chains_to(text, "kestrel_spin")
    assert.is_true(#chains > 0, "no kestrel_spin samples:\n" .. text)
    for _, c in ipairs(chains) do
      local frames = {}
      for f in c.frames:gmatch("[^;]+") do
        frames[#frames + 1] = f
      end
      -- root first: plover_dive as far as the limit allows, then flock_loop and the leaf
      assert.equals(C.MR_MAX_STACK_DEPTH, #frames, c.frames)
      assert.equals("flock_loop", frames[#frames - 1])
      for i = 1, #frames - 2 do
        assert.equals("plover_dive", frames[i], c.frames)
      end
    end
    assert.matches("user stacks cut at " .. C.MR_MAX_STACK_DEPTH
      .. " frames %(their outermost callers left out%): [%d,]+", stdout)
  end)

  it("unwinds a library loaded after the process was first read (dlopen), once it is read again", function()
    local script = run.dir .. "/late_import.py"
    local fh = assert(io.open(script, "w"))
    fh:write([[
import time
time.sleep(1.0)
import _decimal as d
end = time.monotonic() + 30
x = d.Decimal(1)
while time.monotonic() < end:
    x = (x * d.Decimal("1.000001")).sqrt() + d.Decimal(3).ln()
]])
    fh:close()
    local started = io.popen("/usr/bin/python3 " .. e2e.quote(script) .. " >/dev/null 2>&1 & echo $!")
    local pid = tonumber(started:read("*l"))
    started:close()
    run:own(pid)
    local text = profile(pid, { "--unwind", "cfi", "--no-kernel" })
    -- The loop runs in _decimal and libmpdec, loaded a second into the run:
    -- their frames are unwound by their own tables, and the chain goes on
    -- down to the interpreter's start.
    local whole = 0
    for line in text:gmatch("[^\n]+") do
      if line:match("^python3;_start;__libc_start_main;__libc_start_call_main;Py_BytesMain;")
        and (line:match("_decimal") or line:match("mpd_")) then
        whole = whole + 1
      end
    end
    assert.is_true(whole > 0, text)
  end)

  it("builds each file's table once for every process mapping it, within the memory bound", function()
    local a, b = spawn("cpu"), spawn("cpu")
    -- 64 KiB: the workload's table fits, Debian's libc's (about 220 KiB) does not
    local p = assert(profiler.open({ frequency = 99, pids = { a, b }, unwind = "cfi", unwind_table_bytes = 65536 }))
    local u = p:unwind_stats()
    p:close()
    assert.equals(2, u.processes)
    assert.is_true(u.hits >= 3, "the second process found its files' tables built: " .. u.hits)
    assert.is_true(u.not_loaded >= 1, "libc's table is over the bound")
    assert.is_true(u.tables >= 1 and u.table_bytes <= 65536, u.tables .. " tables, " .. u.table_bytes .. " bytes")
  end)

  it("loses those callers with --unwind fp, as frame pointers must", function()
    local pid = spawn("both")
    local text, stdout = profile(pid, { "--unwind", "fp", "--no-kernel" })
    local share = share_ending(chains_to(text, "kestrel_spin"), "flock_loop;kestrel_spin")
    assert.equals(0, share, text)
    assert.matches("user stacks: by frame pointers", stdout)
  end)

  it("unwinds a process that starts during a whole-system profile", function()
    local out = run.dir .. "/all.folded"
    local cmd = string.format("(sleep 0.5; exec %s/frameless cpu 3) & %s profile -d 5 -F 999 --unwind cfi "
      .. "--no-kernel -o %s", e2e.quote(e2e.workloads), e2e.quote(e2e.bin), e2e.quote(out))
    local code, stdout, stderr = e2e.run(cmd)
    assert.same(0, code, stderr)
    -- Its first samples come before the runtime has read its mappings and
    -- loaded its tables (later on a busy machine, where other new programs'
    -- tables are built first): those are walked by frame pointer, which
    -- loses flock_loop, and the summary counts them. Every other sample has
    -- the whole chain.
    local chains = chains_to(e2e.read_all(out), "kestrel_spin")
    local whole = 0
    for _, c in ipairs(chains) do
      if c.frames:match("main;flock_loop;kestrel_spin$") then
        whole = whole + c.count
      else
        assert.equals("kestrel_spin", c.frames)
      end
    end
    assert.is_true(whole > 0, "no sample with the whole chain")
    assert.matches("user stacks: [%d,]+ by CFI tables %([%d,]+ files, [%d.]+ MiB%), [%d,]+ by frame pointer",
      stdout)
  end)
end)
