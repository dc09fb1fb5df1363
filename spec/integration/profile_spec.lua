-- profile_spec.lua - the profile data structure (runtime/profile_data/) through
-- the FFI: interning of strings, modules and frames, and sample aggregation.
local build = require("support.profile_builder")
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

local NONE = build.NONE
local new_profile, string_add, module_add, frame_add = build.new, build.string, build.module, build.add_frame
local frame, add = build.frame, build.sample

-- 0, or nil and the runtime's message.
local function sample_add(p, pid, comm, frames, depth, count, nanos)
  return rt.call(lib.mr_profile_sample_add, p, pid, comm, frames, depth, count, nanos)
end

local function str(p, id)
  return ffi.string(lib.mr_profile_string(p, id))
end

local function sample_frames(p, s)
  local all = lib.mr_profile_stack_frames(p)
  local ids = {}
  for i = 0, s.depth - 1 do
    ids[#ids + 1] = all[s.first + i]
  end
  return ids
end

describe("mr_profile strings", function()
  it("keeps id 0 for the empty string", function()
    local p = new_profile()
    assert.equal(0, string_add(p, ""))
    assert.equal(0, string_add(p, nil))
    assert.equal("", str(p, 0))
  end)

  it("gives the same text the same id and other texts other ids", function()
    local p = new_profile()
    local a = string_add(p, "alpha")
    local b = string_add(p, "beta")
    assert.are_not.equal(0, a)
    assert.are_not.equal(a, b)
    assert.equal(a, string_add(p, "alpha"))
    assert.equal("alpha", str(p, a))
    assert.equal("beta", str(p, b))
  end)

  it("returns the empty string for unknown ids", function()
    local p = new_profile()
    assert.equal("", str(p, 12345))
    assert.equal("", str(p, NONE))
    assert.equal("", ffi.string(lib.mr_profile_string(nil, 1)))
  end)

  it("keeps every string across growth of the table", function()
    local p = new_profile()
    local ids = {}
    for i = 1, 5000 do
      ids[i] = string_add(p, "symbol_" .. i)
    end
    for i = 1, 5000 do
      assert.equal(ids[i], string_add(p, "symbol_" .. i))
      assert.equal("symbol_" .. i, str(p, ids[i]))
    end
  end)
end)

describe("mr_profile modules", function()
  it("reserves module 0 as none", function()
    local p = new_profile()
    assert.equal(1, lib.mr_profile_module_count(p))
    local m = lib.mr_profile_modules(p)[0]
    assert.equal("", str(p, m.path))
    assert.equal("", str(p, m.build_id))
    assert.equal(0, module_add(p, "", ""))
  end)

  it("interns modules by path and build id", function()
    local p = new_profile()
    local libc = module_add(p, "/lib/libc.so.6", "aa11")
    local app = module_add(p, "/usr/bin/app", "")
    local libc2 = module_add(p, "/lib/libc.so.6", "bb22")
    assert.equal(1, libc)
    assert.equal(2, app)
    assert.equal(3, libc2)
    assert.equal(libc, module_add(p, "/lib/libc.so.6", "aa11"))
    assert.equal(4, lib.mr_profile_module_count(p))
    local mods = lib.mr_profile_modules(p)
    assert.equal("/lib/libc.so.6", str(p, mods[libc].path))
    assert.equal("aa11", str(p, mods[libc].build_id))
    assert.equal("/usr/bin/app", str(p, mods[app].path))
    assert.equal("", str(p, mods[app].build_id))
    assert.equal("bb22", str(p, mods[libc2].build_id))
  end)
end)

describe("mr_profile frames", function()
  it("numbers frames from 0 and interns them by every field", function()
    local p = new_profile()
    local m = module_add(p, "/usr/bin/app", "")
    local main = frame(p, "main", m, 0x1000)
    local work = frame(p, "work", m, 0x2000)
    assert.equal(0, main)
    assert.equal(1, work)
    assert.equal(main, frame(p, "main", m, 0x1000))
    assert.equal(2, frame(p, "main", m, 0x1004))
    assert.equal(3, frame(p, "main", 0, 0x1000))
    assert.equal(4, frame(p, "main", m, 0x1000, lib.MR_FRAME_JIT))
    assert.equal(5, lib.mr_profile_frame_count(p))
    local f = lib.mr_profile_frames(p)[work]
    assert.equal("work", str(p, f.name))
    assert.equal(m, f.module)
    assert.equal(0x2000, tonumber(f.address))
    assert.equal(lib.MR_FRAME_USER, f.kind)
    assert.equal(1, f.resolved)
  end)

  it("keeps full 64-bit kernel addresses", function()
    local p = new_profile()
    local k = module_add(p, "[kernel.kallsyms]", "")
    local id = frame(p, "schedule", k, 0xffffffff81a00010ULL, lib.MR_FRAME_KERNEL)
    assert.equal(0xffffffff81a00010ULL, lib.mr_profile_frames(p)[id].address)
  end)

  it("rejects unknown string or module ids", function()
    local p = new_profile()
    local f = ffi.new("struct mr_frame", { name = 999 })
    assert.equal(NONE, frame_add(p, f))
    f.name = 0
    f.module = 7
    assert.equal(NONE, frame_add(p, f))
    assert.equal(NONE, frame_add(p, nil))
    assert.equal(0, lib.mr_profile_frame_count(p))
  end)
end)

describe("mr_profile samples", function()
  local p, main, work, hot

  before_each(function()
    p = new_profile()
    local m = module_add(p, "/usr/bin/app", "")
    main = frame(p, "main", m, 0x1000)
    work = frame(p, "work", m, 0x2000)
    hot = frame(p, "hot", m, 0x3000)
  end)

  it("sums count and nanos of the same pid, comm and stack", function()
    assert.equal(0, add(p, 7, "app", { hot, work, main }, 3, 30))
    assert.equal(0, add(p, 7, "app", { hot, work, main }, 2, 20))
    assert.equal(1, lib.mr_profile_sample_count(p))
    local s = lib.mr_profile_samples(p)[0]
    assert.equal(7, s.pid)
    assert.equal("app", str(p, s.comm))
    assert.equal(5, tonumber(s.count))
    assert.equal(50, tonumber(s.nanos))
    assert.same({ hot, work, main }, sample_frames(p, s))
  end)

  it("keeps samples apart when pid, comm or stack differ", function()
    add(p, 7, "app", { hot, work, main }, 1, 1)
    add(p, 8, "app", { hot, work, main }, 1, 1)
    add(p, 7, "app2", { hot, work, main }, 1, 1)
    add(p, 7, "app", { work, main }, 1, 1)
    add(p, 7, "app", { main, work, hot }, 1, 1)
    add(p, 7, "app", { hot, work, main, main }, 1, 1)
    assert.equal(6, lib.mr_profile_sample_count(p))
  end)

  it("stores each stack once, back to back, leaf first", function()
    add(p, 1, "a", { hot, work, main }, 1, 0)
    add(p, 1, "a", { work, main }, 1, 0)
    add(p, 1, "a", { hot, work, main }, 1, 0)
    local samples = lib.mr_profile_samples(p)
    local all = lib.mr_profile_stack_frames(p)
    assert.equal(0, samples[0].first)
    assert.equal(3, samples[0].depth)
    assert.equal(3, samples[1].first)
    assert.equal(2, samples[1].depth)
    local flat = {}
    for i = 0, 4 do
      flat[#flat + 1] = all[i]
    end
    assert.same({ hot, work, main, work, main }, flat)
  end)

  it("accepts an empty stack and aggregates it too", function()
    assert.equal(0, sample_add(p, 3, "idle", nil, 0, 4, 40))
    assert.equal(0, sample_add(p, 3, "idle", nil, 0, 1, 10))
    assert.equal(1, lib.mr_profile_sample_count(p))
    local s = lib.mr_profile_samples(p)[0]
    assert.equal(0, s.depth)
    assert.equal(5, tonumber(s.count))
    assert.equal(50, tonumber(s.nanos))
  end)

  it("treats a NULL comm as the empty string", function()
    assert.equal(0, sample_add(p, 3, nil, nil, 0, 1, 1))
    assert.equal(0, lib.mr_profile_samples(p)[0].comm)
  end)

  it("rejects a NULL stack with a depth and unknown frame ids", function()
    local refused = "cannot add a sample: no profile or thread, or a frame id it does not have"
    assert.same({ nil, refused }, { sample_add(p, 1, "a", nil, 2, 1, 1) })
    assert.same({ nil, refused }, { add(p, 1, "a", { hot, 99 }, 1, 1) })
    assert.same({ nil, refused }, { add(p, 1, "a", { NONE }, 1, 1) })
    assert.same({ nil, refused }, { sample_add(nil, 1, "a", nil, 0, 1, 1) })
    assert.equal(0, lib.mr_profile_sample_count(p))
  end)

  it("aggregates 200k distinct stacks with exact totals", function()
    local nframes = 500
    local ids = {}
    for i = 1, nframes do
      ids[i] = frame(p, "f" .. i, 0, i)
    end
    local buf = ffi.new("uint32_t[3]")
    local n, want_count, want_nanos = 200000, 0, 0
    for round = 1, 2 do
      for i = 0, n - 1 do
        buf[0] = ids[i % nframes + 1]
        buf[1] = ids[math.floor(i / nframes) % nframes + 1]
        buf[2] = ids[math.floor(i / (nframes * nframes)) + 1]
        local count = i % 7 + round
        assert(sample_add(p, 100 + i % 3, "stress", buf, 3, count, count * 1000) == 0)
        want_count = want_count + count
        want_nanos = want_nanos + count * 1000
      end
    end
    assert.equal(n, lib.mr_profile_sample_count(p))
    local samples = lib.mr_profile_samples(p)
    local all = lib.mr_profile_stack_frames(p)
    local count, nanos = 0, 0
    for i = 0, n - 1 do
      local s = samples[i]
      count = count + tonumber(s.count)
      nanos = nanos + tonumber(s.nanos)
      assert(s.depth == 3 and s.first == i * 3)
    end
    assert.equal(want_count, count)
    assert.equal(want_nanos, nanos)
    local last = samples[n - 1]
    assert.equal(100 + (n - 1) % 3, last.pid)
    assert.equal(ids[(n - 1) % nframes + 1], all[last.first])
  end)
end)

describe("mr_profile samples of threads", function()
  it("keeps the threads of a process apart, and a copy keeps them", function()
    local p = new_profile()
    local hot = frame(p, "hot", 0, 1)
    assert.equal(0, build.thread_sample(p, 7, "app", 8, "worker", { hot }, 2, 20))
    assert.equal(0, build.thread_sample(p, 7, "app", 8, "worker", { hot }, 1, 10))
    assert.equal(0, build.thread_sample(p, 7, "app", 9, "io", { hot }, 5, 50))
    assert.equal(0, add(p, 7, "app", { hot }, 4, 40))
    local function threads_of(prof)
      local out = {}
      local samples = lib.mr_profile_samples(prof)
      for i = 0, lib.mr_profile_sample_count(prof) - 1 do
        local s = samples[i]
        out[#out + 1] = { s.tid, str(prof, s.thread), tonumber(s.count) }
      end
      table.sort(out, function(a, b) return a[1] < b[1] end)
      return out
    end
    local expected = { { 0, "", 4 }, { 8, "worker", 3 }, { 9, "io", 5 } }
    assert.same(expected, threads_of(p))
    local copy = new_profile()
    assert(rt.call(lib.mr_profile_copy, copy, p, nil, 0))
    assert.same(expected, threads_of(copy))
  end)
end)
