-- summary_spec.lua - end-of-run summary: ranking and text formatting.
local C = require("moonrover.consts")
local summary = require("moonrover.profiler.summary")

local function sample_stacks()
  return {
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_a" }, count = 30, nanos = 3e9 },
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_b" }, count = 10, nanos = 2.5e6 },
    { comm = "other", pid = 43, frames = { "main", "rec", "rec", "rec" }, count = 10, nanos = 5e5 },
  }
end

local function names(rows)
  local out = {}
  for i, row in ipairs(rows) do out[i] = row.name end
  return out
end

local function lines_of(text)
  local lines = {}
  for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  return lines
end

describe("summary.compute", function()
  it("computes self and total values and shares, counting recursion once", function()
    local s = summary.compute(sample_stacks(), {}, 10)
    assert.are.equal(50, s.total)
    assert.are.equal(2, s.processes)
    assert.are.equal(3, s.stacks)
    assert.are.same({ "hot_a", "hot_b", "rec" }, names(s.top_self))
    assert.are.same({ name = "hot_a", value = 30, share = 0.6 }, s.top_self[1])
    assert.are.same({ "main", "work", "hot_a", "hot_b", "rec" }, names(s.top_total))
    assert.are.same({ name = "main", value = 50, share = 1 }, s.top_total[1])
    assert.are.same({ name = "rec", value = 10, share = 0.2 }, s.top_total[5])
  end)

  it("breaks ties by name and keeps only the top n", function()
    local stacks = {
      { comm = "a", pid = 1, frames = { "zeta" }, count = 5 },
      { comm = "a", pid = 1, frames = { "alpha" }, count = 5 },
      { comm = "a", pid = 1, frames = { "mid" }, count = 5 },
      { comm = "a", pid = 1, frames = { "big" }, count = 9 },
    }
    local s = summary.compute(stacks, {}, 3)
    assert.are.same({ "big", "alpha", "mid" }, names(s.top_self))
    assert.are.same({ "big", "alpha", "mid" }, names(s.top_total))
  end)

  it("uses nanoseconds for off-CPU profiles", function()
    local s = summary.compute(sample_stacks(), { off_cpu = true, unit = "nanoseconds" })
    assert.are.equal(3e9 + 2.5e6 + 5e5, s.total)
    assert.are.equal("hot_a", s.top_self[1].name)
    assert.is_true(s.top_self[1].share > 0.99 and s.top_self[1].share <= 1)
  end)

  it("counts addresses without a symbol by their module, as perf does", function()
    local s = summary.compute({
      { comm = "python3", pid = 7, frames = { "main", "python3.11+0x1cfb20" }, resolved = { true, false }, count = 6 },
      { comm = "python3", pid = 7, frames = { "main", "python3.11+0x1cfb25" }, resolved = { true, false }, count = 4 },
      { comm = "python3", pid = 7, frames = { "main", "libc.so.6+0x9a0", "python3.11+0x1cfb20" },
        resolved = { true, false, false }, count = 2 },
      { comm = "python3", pid = 7, frames = { "main", "PyEval_EvalFrame" }, resolved = { true, true }, count = 1 },
    }, {}, 10)
    assert.same({ { name = "[python3.11]", value = 12 }, { name = "PyEval_EvalFrame", value = 1 } },
      { { name = s.top_self[1].name, value = s.top_self[1].value },
        { name = s.top_self[2].name, value = s.top_self[2].value } })
    assert.same(2, #s.top_self)
    assert.same({ "main", "[python3.11]", "[libc.so.6]", "PyEval_EvalFrame" }, names(s.top_total))
    assert.same(13, s.top_total[1].value)
  end)

  it("keeps a symbol's own name whatever it looks like", function()
    assert.same("operator+", summary.function_of("operator+", true))
    assert.same("[kernel.kallsyms]", summary.function_of("[kernel.kallsyms]+0xff", false))
    assert.same("a+0xzz", summary.function_of("a+0xzz", false))
    assert.same("LazyCompile:stub+0x10", summary.function_of("LazyCompile:stub+0x10", true))
    local jit = { pid = 9, frames = { "main", "jit_stub+0x1f" }, resolved = { true, true }, count = 3 }
    local s = summary.compute({ jit }, {}, 10)
    assert.same("jit_stub+0x1f", s.top_self[1].name)
  end)

  it("handles an empty profile", function()
    local s = summary.compute({}, {})
    assert.are.equal(0, s.total)
    assert.are.equal(0, s.processes)
    assert.are.same({}, s.top_self)
    assert.are.same({}, s.top_total)
  end)
end)

describe("summary.format", function()
  local stats = {
    duration = 10, samples = 53, output = "/tmp/profile.svg",
    lost = { { reason = "stack map full", n = 3 }, { reason = "ring buffer full", n = 0 },
             { reason = "symbol cache full", n = 1200 } },
  }

  it("shows the run statistics and both tables with percentages", function()
    local meta = { title = "moonrover: On-CPU samples, pid 7", scope = "pid 7" }
    local text = summary.format(summary.compute(sample_stacks(), {}), stats, meta)
    assert.equal("moonrover profile (on-CPU): pid 7", lines_of(text)[1])
    assert.truthy(text:find("duration: 10.0 s", 1, true))
    assert.truthy(text:find("samples taken: 53", 1, true))
    assert.truthy(text:find("samples lost: 1,203 (stack map full: 3, symbol cache full: 1,200)\n",
                            1, true))
    assert.is_nil(text:find("ring buffer full", 1, true))
    assert.truthy(text:find("processes seen: 2", 1, true))
    assert.truthy(text:find("distinct stacks: 3", 1, true))
    assert.truthy(text:find("output: /tmp/profile.svg", 1, true))
    assert.truthy(text:find("top 3 by self", 1, true))
    assert.truthy(text:find("top 5 by total", 1, true))
    assert.truthy(text:match("\n  hot_a%s+30%s+60%.0%%\n"))
    assert.truthy(text:match("\n  main%s+50%s+100%.0%%\n"))
    assert.truthy(text:match("\n  rec%s+10%s+20%.0%%\n"))
  end)

  it("says how many stacks were cut at a frame that is not code, when some were", function()
    local s = summary.compute(sample_stacks(), {})
    assert.truthy(summary.format(s, { truncated = 1234 }, {})
      :find("\nstacks cut at a frame that is not code: 1,234 (code without frame pointers)\n", 1, true))
    assert.is_nil(summary.format(s, { truncated = 0 }, {}):find("stacks cut", 1, true))
  end)

  it("says how user stacks were walked, by CFI tables or by frame pointers", function()
    local s = summary.compute(sample_stacks(), {})
    local cfi = { mode = "cfi", cfi = 12345, fp = 67, tables = 98, table_bytes = 5 * 1048576 }
    assert.truthy(summary.format(s, { unwind = cfi }, {})
      :find("\nuser stacks: 12,345 by CFI tables (98 files, 5.0 MiB), 67 by frame pointer\n", 1, true))
    assert.truthy(summary.format(s, { unwind = { mode = "fp" } }, {})
      :find("\nuser stacks: by frame pointers (--unwind fp)\n", 1, true))
    assert.is_nil(summary.format(s, {}, {}):find("user stacks", 1, true))
  end)

  it("says how many user stacks were deeper than the walk goes", function()
    local s = summary.compute(sample_stacks(), {})
    local cfi = { mode = "cfi", cfi = 2000, fp = 0, cut = 1500, tables = 3, table_bytes = 1048576 }
    assert.truthy(summary.format(s, { unwind = cfi }, {})
      :find("\nuser stacks: 2,000 by CFI tables (3 files, 1.0 MiB), 0 by frame pointer\n"
        .. "user stacks cut at " .. C.MR_MAX_STACK_DEPTH
        .. " frames (their outermost callers left out): 1,500\n", 1, true))
    cfi.cut = 0
    assert.is_nil(summary.format(s, { unwind = cfi }, {}):find("cut at", 1, true))
  end)

  it("says none when no samples were lost or lost is missing", function()
    local s = summary.compute(sample_stacks(), {})
    local zero = { lost = { { reason = "stack map full", n = 0 } } }
    assert.truthy(summary.format(s, zero, {}):find("samples lost: none\n", 1, true))
    assert.truthy(summary.format(s, {}, {}):find("samples lost: none\n", 1, true))
  end)

  it("shows off-CPU values as time", function()
    local meta = { off_cpu = true, unit = "nanoseconds" }
    local text = summary.format(summary.compute(sample_stacks(), meta), {}, meta)
    assert.truthy(text:find("off-CPU", 1, true))
    assert.truthy(text:find("off-CPU time: 3.00 s", 1, true))
    assert.truthy(text:match("\n  hot_a%s+3%.00 s%s+99%.9%%\n"))
    assert.truthy(text:match("\n  hot_b%s+2%.5 ms%s+0%.1%%\n"))
    assert.truthy(text:match("\n  rec%s+0%.5 ms%s+0%.0%%\n"))
  end)

  it("fits one screen and truncates long names", function()
    local stacks = {}
    for i = 1, 40 do
      stacks[i] = { comm = "app", pid = i, count = i,
                    frames = { "main", string.rep("very_long_function_name_", 6) .. i } }
    end
    local text = summary.format(summary.compute(stacks, {}), stats, { scope = string.rep("t", 200) })
    local lines = lines_of(text)
    assert.is_true(#lines <= 30)
    for _, line in ipairs(lines) do assert.is_true(#line <= 80, line) end
    assert.truthy(text:find("top 10 by self", 1, true))
    assert.truthy(text:find("top 10 by total", 1, true))
    assert.truthy(text:match("\n  very_long_function_name_very%.%._very_long_function_name_40 "))
    assert.truthy(text:match("\n  very_long_function_name_very%.%._very_long_function_name_39 "))
  end)

  it("says why a profile of some processes is empty, and when they exited", function()
    local off = { off_cpu = true, unit = "nanoseconds", scope = "pid 7" }
    local text = summary.format(summary.compute({}, off), { gone_after = 0.5 }, off)
    assert.truthy(text:find("no profiled thread blocked during the profile\n(off-CPU time counts waits: sleep, "
      .. "I/O, locks; a busy loop never waits).\n", 1, true), text)
    assert.truthy(text:find("\nthe profiled processes exited 0.5 s into the profile: stopped then\n", 1, true))
    local on = { scope = "pid 7" }
    text = summary.format(summary.compute({}, on), {}, on)
    assert.truthy(text:find("no samples were taken: the profiled processes did not run on a CPU.\n", 1, true))
    for _, line in ipairs(lines_of(text)) do assert.is_true(#line <= 80, line) end
  end)

  it("does not crash on missing stats and says that no samples were taken", function()
    local text = summary.format(summary.compute({}, {}), nil, nil)
    assert.truthy(text:find("no samples were taken", 1, true))
    assert.truthy(text:find("duration: unknown", 1, true))
    assert.truthy(text:find("samples taken: 0", 1, true))
    local off = summary.format(summary.compute({}, { off_cpu = true }), {}, { off_cpu = true })
    assert.truthy(off:find("no samples were taken", 1, true))
  end)
end)
