-- Specs for a profile as moonrover.profiles hands it to scripts
-- (profile_result.lua) and for mr_profile_copy, which splits one shared
-- profiler's samples between profiles: built profiles, no kernel.
local build = require("support.profile_builder")
local folded = require("moonrover.profiler.writers.folded")
local profile_result = require("moonrover.profiler.profile_result")
local files = require("support.files")
local rt = require("moonrover.rt").with_test_api()
local lib = rt.lib

-- Two processes: 7 (main -> work -> spin, 6 samples; main -> idle, 2) and
-- 9 (main -> spin, 4 samples), with a kernel frame under 9's spin.
local function two_processes()
  local p = build.new()
  local m = build.module(p, "/usr/bin/app", "abcd", true)
  local main, work = build.frame(p, "main", m, 0x10), build.frame(p, "work", m, 0x20)
  local spin, idle = build.frame(p, "spin", m, 0x30), build.frame(p, "idle", m, 0x40)
  local sys = build.frame(p, "do_syscall_64", 0, 0xffff0000, lib.MR_FRAME_KERNEL)
  assert(build.sample(p, 7, "app", { spin, work, main }, 6, 6e6))
  assert(build.sample(p, 7, "app", { idle, main }, 2, 2e6))
  assert(build.sample(p, 9, "app", { sys, spin, main }, 4, 4e6))
  return p
end

local function copy(src, pids)
  local dst = build.new()
  local array = rt.ffi.new("int32_t[?]", math.max(#pids, 1), pids)
  assert(rt.call(lib.mr_profile_copy, dst, src, array, #pids))
  return dst
end

local function result(p, pids)
  return profile_result.new({ profile = p, off_cpu = false, frequency = 99, pids = pids, duration = 2,
    ended = "duration" })
end

describe("mr_profile_copy", function()
  it("copies only the samples of the pids asked for, with their frames", function()
    local r = result(copy(two_processes(), { 9 }), { 9 })
    assert.same(4, r.total)
    local stacks = {}
    for s in r:stacks() do
      stacks[#stacks + 1] = s
    end
    assert.same(1, #stacks)
    assert.same({ "main", "spin", "do_syscall_64" }, stacks[1].frames)
    assert.same({ "user", "user", "kernel" }, stacks[1].kinds)
    assert.same(9, stacks[1].pid)
    assert.same("app", stacks[1].comm)
  end)

  it("marks which frames are symbols and which are addresses without one", function()
    local p = build.new()
    local m = build.module(p, "/usr/bin/app", "abcd", true)
    local address = rt.ffi.new("struct mr_frame", { name = build.string(p, "app+0x99"), module = m, address = 0x99,
      kind = lib.MR_FRAME_USER, resolved = 0 })
    assert(build.sample(p, 7, "app", { build.add_frame(p, address), build.frame(p, "main", m, 0x10) }, 1, 1e6))
    local stacks = require("moonrover.profiler.profile_view").stacks(p)
    assert.same({ "main", "app+0x99" }, stacks[1].frames)
    assert.same({ true, false }, stacks[1].resolved)
  end)

  it("sums into stacks the destination already has, and copies all with no pids", function()
    local src = two_processes()
    local dst = copy(src, {})
    assert(rt.call(lib.mr_profile_copy, dst, src, nil, 0))
    local r = result(dst, { 7, 9 })
    assert.same(24, r.total)
    assert.same(3, lib.mr_profile_sample_count(dst))
  end)

  it("refuses to copy a profile into itself", function()
    local p = two_processes()
    local ok, err = rt.call(lib.mr_profile_copy, p, p, nil, 0)
    assert.is_nil(ok)
    assert.matches("bad arguments", err)
  end)
end)

describe("profile result", function()
  local dir

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir) == 0)
  end)

  after_each(function()
    os.execute("rm -rf " .. dir)
  end)

  it("ranks functions by self and by total samples", function()
    local r = result(two_processes(), { 7, 9 })
    assert.same(12, r.total)
    assert.same("samples", r.unit)
    local by_self = r:top(2)
    assert.same({ "spin", "do_syscall_64" }, { by_self[1].name, by_self[2].name })
    assert.same(6, by_self[1].value)
    local by_total = r:top(1, "total")
    assert.same("main", by_total[1].name)
    assert.same(1, by_total[1].share)
    local none, err = r:top(3, "most")
    assert.is_nil(none)
    assert.matches("by must be", err)
  end)

  it("counts off-CPU profiles in blocked nanoseconds", function()
    local r = profile_result.new({ profile = two_processes(), off_cpu = true, pids = { 7 }, duration = 1 })
    assert.same(12e6, r.total)
    assert.same(12, r.samples)
    assert.same("nanoseconds", r.unit)
  end)

  it("writes folded stacks that read back to the same total", function()
    local r = result(two_processes(), { 7, 9 })
    assert(r:write(dir .. "/p.folded"))
    local sum = 0
    for _, s in ipairs(folded.parse(files.read(dir .. "/p.folded"))) do
      sum = sum + s.count
    end
    assert.same(r.total, sum)
  end)

  it("writes gzipped pprof and SVG by extension, and refuses a name it cannot place", function()
    local r = result(two_processes(), { 7, 9 })
    assert(r:write(dir .. "/p.pb.gz"))
    assert.same("\31\139", files.read(dir .. "/p.pb.gz"):sub(1, 2))
    assert(r:write(dir .. "/p.out", "svg"))
    assert.matches("^<%?xml", files.read(dir .. "/p.out"))
    local ok, err = r:write(dir .. "/p.dat")
    assert.is_nil(ok)
    assert.matches("cannot tell the format from the file name '.*p%.dat': name the format", err)
    ok, err = r:write(dir .. "/missing/p.svg")
    assert.is_nil(ok)
    assert.is_string(err)
  end)
end)
