-- pprof_spec.lua - mr_pprof_write (runtime/pprof/): writes profiles and reads
-- them back with the real reader, `go tool pprof`; a failed write names where.
local T = require("moonrover.consts_test")
local build = require("support.profile_builder")
local output_file = require("moonrover.output_file")
local rt = require("moonrover.rt").with_test_api()
local tmpfs = require("support.tmpfs")
local lib = rt.lib

local MS = 1000000

-- Cases that mount a small file system.
local as_root = require("support.skip").guard(it, pending, not require("support.e2e").is_root() and
  "needs root (mount)" or nil)

local function sh_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Runs a shell command; returns its output (stdout and stderr) and exit code.
local function run(cmd)
  local f = assert(io.popen(cmd .. " 2>&1; echo \"__exit=$?\""))
  local out = f:read("*a")
  f:close()
  local body, code = out:match("^(.*)__exit=(%d+)%s*$")
  return body, tonumber(code)
end

local function list_dir(dir)
  local out = run("ls -A " .. sh_quote(dir))
  local names = {}
  for name in out:gmatch("[^\n]+") do
    names[#names + 1] = name
  end
  table.sort(names)
  return names
end

local tmp -- per-test directory, also HOME and caches of go

local function pprof(args, file)
  local env = string.format(
    "HOME=%s GOCACHE=%s/gocache GOPATH=%s/gopath GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local",
    sh_quote(tmp), sh_quote(tmp), sh_quote(tmp))
  local out, code = run(env .. " go tool pprof " .. args .. " " .. sh_quote(file))
  assert(code == 0, "go tool pprof " .. args .. " failed (" .. tostring(code) .. "):\n" .. out)
  return out
end

-- Splits `go tool pprof -traces` output into {value =, frames = {leaf..root},
-- labels = {key = value}} per stack.
local function parse_traces(out)
  local traces = {}
  for block in (out .. "\n-----------+"):gmatch("%-%-%-%-%-%-%-%-%-%-%-%+[^\n]*\n(.-)%f[%-]") do
    local t = { frames = {}, labels = {} }
    for line in block:gmatch("[^\n]+") do
      local key, value = line:match("^%s*([%w_]+):%s+(.-)%s*$")
      local amount, name = line:match("^%s*(%S+)%s%s+(%S.-)%s*$")
      if key then
        t.labels[key] = value
      elseif amount then
        t.value = amount
        t.frames[1] = name
      elseif line:match("%S") then
        t.frames[#t.frames + 1] = line:match("^%s*(.-)%s*$")
      end
    end
    if t.value then
      traces[#traces + 1] = t
    end
  end
  return traces
end

local function find_trace(traces, leaf)
  for _, t in ipairs(traces) do
    if t.frames[1] == leaf then
      return t
    end
  end
end

local new_profile, module = build.new, build.module
local frame = build.frame

local function add(p, pid, comm, ids, count, nanos)
  assert.equal(0, build.sample(p, pid, comm, ids, count, nanos))
end

-- main -> work -> hot_a (30 samples) and main -> work -> hot_b (10), pid 4242 "app".
local function on_cpu_profile()
  local p = new_profile()
  local app = module(p, "/usr/bin/app", "0123456789abcdef")
  local main = frame(p, "main", app, 0x1100)
  local work = frame(p, "work", app, 0x1200)
  add(p, 4242, "app", { frame(p, "hot_a", app, 0x1300), work, main }, 30, 30 * 10 * MS)
  add(p, 4242, "app", { frame(p, "hot_b", app, 0x1400), work, main }, 10, 10 * 10 * MS)
  return p
end

-- A blocked read: schedule (kernel) <- read (libc) <- main, pid 77 "server".
local function off_cpu_profile()
  local p = new_profile()
  local kernel = module(p, T.MR_KERNEL_MODULE, "")
  local libc = module(p, "/usr/lib/x86_64-linux-gnu/libc.so.6", "feedface")
  local server = module(p, "/usr/sbin/server", "", true)
  local stack = {
    frame(p, "schedule", kernel, 0xffffffff81c00010ULL, lib.MR_FRAME_KERNEL),
    frame(p, "read", libc, 0x11a0),
    frame(p, "main", server, 0x2000),
  }
  add(p, 77, "server", stack, 3, 250 * MS)
  return p
end

-- Writes p as pprof into path through an output file: 0, or nil and why.
local function write(p, path, off_cpu, main_file)
  local out, err = output_file.open(path)
  if not out then
    return nil, err
  end
  local ok
  ok, err = rt.call(lib.mr_pprof_write, p, out.handle, off_cpu, 10 * MS, 1000 * MS, main_file)
  if not ok then
    out:abort()
    return nil, "cannot write " .. path .. ": " .. err
  end
  ok, err = out:commit()
  return ok and 0, err
end

describe("mr_pprof_write", function()
  setup(function()
    local _, code = run("command -v go")
    assert(code == 0, "`go` (golang-go) is required to read pprof files back: run the project setup")
  end)

  before_each(function()
    tmp = run("mktemp -d /tmp/moonrover-pprof.XXXXXX"):match("^%s*(.-)%s*$")
    assert(tmp:match("^/tmp/moonrover%-pprof%."))
  end)

  after_each(function()
    run("rm -rf " .. sh_quote(tmp))
  end)

  it("writes a gzip file and leaves no temporary file behind", function()
    local path = tmp .. "/cpu.pb.gz"
    assert.equal(0, write(on_cpu_profile(), path, 0))
    local f = assert(io.open(path, "rb"))
    local magic = f:read(2)
    f:close()
    assert.equal("\31\139", magic)
    assert.same({ "cpu.pb.gz" }, list_dir(tmp))
  end)

  it("gives flat counts and shares that go tool pprof -top reports", function()
    local path = tmp .. "/cpu.pb.gz"
    assert.equal(0, write(on_cpu_profile(), path, 0))
    local top = pprof("-top -sample_index=samples", path)
    assert.matches("\n%s+30%s+75%.00%%%s+75%.00%%%s+30%s+75%.00%%%s+hot_a\n", top)
    assert.matches("\n%s+10%s+25%.00%%%s+100%%%s+10%s+25%.00%%%s+hot_b\n", top)
    assert.matches("accounting for 40, 100%% of 40 total", top)
    local cpu = pprof("-top -sample_index=cpu", path)
    assert.matches("\n%s+300ms%s+75%.00%%[^\n]*hot_a\n", cpu)
    assert.matches("\n%s+100ms%s+25%.00%%[^\n]*hot_b\n", cpu)
    assert.matches("\n%s+0%s+0%%%s+100%%%s+400ms%s+100%%%s+main\n", cpu)
  end)

  it("puts a sample with no frame under [unknown], so that -top adds up to the total", function()
    local p = on_cpu_profile()
    add(p, 4242, "app", {}, 10, 10 * 10 * MS)
    local path = tmp .. "/cpu.pb.gz"
    assert.equal(0, write(p, path, 0))
    local top = pprof("-top -sample_index=samples", path)
    assert.matches("\n%s+10%s+20%.00%%%s+[%d.]+%%%s+10%s+20%.00%%%s+%[unknown%]\n", top)
    assert.matches("accounting for 50, 100%% of 50 total", top)
  end)

  it("keeps stacks leaf first, the process in labels and not as a frame", function()
    local path = tmp .. "/cpu.pb.gz"
    assert.equal(0, write(on_cpu_profile(), path, 0))
    local traces = parse_traces(pprof("-traces", path))
    assert.equal(2, #traces)
    local a = find_trace(traces, "hot_a")
    assert.same({ "hot_a", "work", "main" }, a.frames)
    assert.equal("300ms", a.value)
    assert.same({ comm = "app", pid = "4242" }, a.labels)
    local b = find_trace(traces, "hot_b")
    assert.same({ "hot_b", "work", "main" }, b.frames)
    assert.equal("100ms", b.value)
    local top = pprof("-top", path)
    assert.is_nil(top:find("%%%s+app\n"), top)
    assert.matches("\n%s+0%s+0%%%s+100%%%s+400ms%s+100%%%s+main\n", top)
  end)

  it("labels each thread of a per-thread profile with its id and name", function()
    local p = new_profile()
    local app = module(p, "/usr/bin/app", "", true)
    local main, hot = frame(p, "main", app, 0x1100), frame(p, "hot", app, 0x1200)
    assert.equal(0, build.thread_sample(p, 4242, "app", 4243, "worker", { hot, main }, 30, 300 * MS))
    assert.equal(0, build.thread_sample(p, 4242, "app", 4244, "io", { hot, main }, 10, 100 * MS))
    local path = tmp .. "/threads.pb.gz"
    assert.equal(0, write(p, path, 0))
    local traces = parse_traces(pprof("-traces", path))
    assert.equal(2, #traces)
    local by_thread = {}
    for _, t in ipairs(traces) do
      by_thread[t.labels.thread] = t
    end
    assert.same({ comm = "app", pid = "4242", thread = "worker", tid = "4243" }, by_thread.worker.labels)
    assert.equal("300ms", by_thread.worker.value)
    assert.same({ comm = "app", pid = "4242", thread = "io", tid = "4244" }, by_thread.io.labels)
    local tags = pprof("-tags", path)
    assert.matches("thread: Total", tags, 1, true)
    assert.matches("300.0ms (75.00%): worker", tags, 1, true)
  end)

  it("names the main mapping of a profile of many processes as told, not after one of them", function()
    local p = new_profile()
    local app = module(p, "/usr/bin/app", "", true)
    local db = module(p, "/usr/sbin/db", "", true)
    add(p, 1, "app", { frame(p, "serve", app, 0x1100) }, 3, 30 * MS)
    add(p, 2, "db", { frame(p, "query", db, 0x2100) }, 1, 10 * MS)
    local named, plain = tmp .. "/whole.pb.gz", tmp .. "/plain.pb.gz"
    assert.equal(0, write(p, named, 0, "moonrover whole-system profile"))
    assert.equal(0, write(p, plain, 0))
    assert.matches("File: moonrover whole-system profile\n", pprof("-top", named), 1, true)
    assert.matches("File: app\n", pprof("-top", plain), 1, true)
    local traces = parse_traces(pprof("-traces", named))
    assert.same({ "serve" }, find_trace(traces, "serve").frames)
  end)

  it("names the sample and period types and the mappings", function()
    local path = tmp .. "/cpu.pb.gz"
    assert.equal(0, write(on_cpu_profile(), path, 0))
    local raw = pprof("-raw", path)
    assert.matches("PeriodType: cpu nanoseconds\n", raw, 1, true)
    assert.matches("Period: 10000000\n", raw, 1, true)
    assert.matches("Duration: 1s", raw, 1, true)
    assert.matches("samples/count cpu/nanoseconds", raw, 1, true)
    assert.matches("\n1: 0x0/0x1401/0x0 /usr/bin/app 0123456789abcdef [FN]", raw, 1, true)
  end)

  it("writes off-CPU profiles with kernel frames in their mapping", function()
    local path = tmp .. "/offcpu.pb.gz"
    assert.equal(0, write(off_cpu_profile(), path, 1))
    local raw = pprof("-raw", path)
    assert.matches("PeriodType: off_cpu nanoseconds\n", raw, 1, true)
    assert.matches("Period: 1\n", raw, 1, true)
    assert.matches("samples/count off_cpu/nanoseconds", raw, 1, true)
    assert.matches("0x0/0xffffffff81c00011/0x0 [kernel.kallsyms]", raw, 1, true)
    assert.matches("/usr/lib/x86_64-linux-gnu/libc.so.6 feedface [FN]", raw, 1, true)
    assert.matches("0xffffffff81c00010 M=%d+ schedule %[kernel%.kallsyms%]", raw)
    local traces = parse_traces(pprof("-traces -sample_index=off_cpu", path))
    assert.equal(1, #traces)
    assert.same({ "schedule", "read", "main" }, traces[1].frames)
    assert.equal("250ms", traces[1].value)
    local top = pprof("-top -sample_index=off_cpu", path)
    assert.matches("Type: off_cpu\n", top, 1, true)
    -- the kernel's module came first, but the executable is the main binary
    assert.matches("File: server\n", top, 1, true)
  end)

  it("writes large profiles that stream through several compression chunks", function()
    local p = new_profile()
    local mod = module(p, "/usr/bin/big", "")
    local leaves, n = {}, 20000
    local root = frame(p, "root", mod, 1)
    for i = 1, n do
      leaves[i] = frame(p, string.format("function_with_a_long_name_%05d", i), mod, 0x1000 + i)
      add(p, i % 50, "worker" .. i % 4, { leaves[i], root }, i % 5 + 1, 1000)
    end
    local path = tmp .. "/big.pb.gz"
    assert.equal(0, write(p, path, 0))
    assert(io.open(path):seek("end") > 64 * 1024)
    local top = pprof("-top -sample_index=samples -nodecount=1", path)
    assert.matches("of 60000 total", top, 1, true)
  end)

  it("writes an empty profile that the reader accepts", function()
    local path = tmp .. "/empty.pb.gz"
    assert.equal(0, write(new_profile(), path, 0))
    assert.matches("samples/count cpu/nanoseconds", pprof("-raw", path), 1, true)
  end)

  it("returns an error and a message for an unwritable path", function()
    local ok, err = write(on_cpu_profile(), "/proc/x/y", 0)
    assert.is_nil(ok)
    assert.equal("cannot write /proc/x/y: /proc/x: No such file or directory", err)
  end)

  as_root("names the path and the temporary file's directory when the disk is full", function()
    local small = tmp .. "/small"
    tmpfs.mount(small, "16k", pending, finally)
    local p = new_profile()
    local mod = module(p, "/usr/bin/big", "")
    for i = 1, 20000 do
      add(p, i, "worker", { frame(p, string.format("function_%05d", i), mod, 0x1000 + i) }, 1, 1000)
    end
    local out = assert(output_file.open(small .. "/cpu.pb.gz"))
    local ok, err = rt.call(lib.mr_pprof_write, p, out.handle, 0, 10 * MS, 1000 * MS, nil)
    out:abort()
    assert.same({ nil, "No space left on device (written first to an unnamed temporary file in " .. small .. ")" },
      { ok, err })
    assert.same({}, list_dir(small))
    assert.same({ nil, "cannot write " .. small .. "/cpu.pb.gz: No space left on device (written first to an " ..
      "unnamed temporary file in " .. small .. ")" }, { write(p, small .. "/cpu.pb.gz", 0) })
    assert.same({}, list_dir(small))
  end)

  it("removes its temporary file when the final rename fails", function()
    local dir = tmp .. "/taken"
    assert.equal(0, select(2, run("mkdir " .. sh_quote(dir))))
    local ok, err = write(on_cpu_profile(), dir, 0)
    assert.is_nil(ok)
    assert.equal("cannot write " .. dir .. ": Is a directory", err)
    assert.same({ "taken" }, list_dir(tmp))
  end)

  it("rejects a missing profile or output", function()
    local ok, err = write(nil, tmp .. "/x.pb.gz", 0)
    assert.is_nil(ok)
    assert.equal("cannot write " .. tmp .. "/x.pb.gz: writing pprof: no profile or no output file", err)
    assert.same({}, list_dir(tmp))
    assert.same({ nil, "writing pprof: no profile or no output file" },
      { rt.call(lib.mr_pprof_write, on_cpu_profile(), nil, 0, 0, 0, nil) })
  end)
end)
