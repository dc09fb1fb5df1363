-- End-to-end specs for `moonrover profile` and `moonrover check`: real BPF,
-- real workloads, real output files read back by real readers.
local e2e = require("support.e2e")
local folded = require("moonrover.writers.folded")

local skip = e2e.skip_reason()

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

describe("moonrover profile (end to end)", function()
  local dir, pids

  before_each(function()
    dir = e2e.tmpdir()
    pids = {}
  end)

  after_each(function()
    for _, pid in ipairs(pids) do
      e2e.kill(pid)
    end
    e2e.rmdir(dir)
  end)

  local function spawn(name, args)
    local pid = e2e.spawn(name, args)
    pids[#pids + 1] = pid
    return pid
  end

  it("shows the 3:1 CPU ratio of two known functions, both named", function()
    if skip then return pending(skip) end
    local pid = spawn("cpu_ratio", "30")
    local out = dir .. "/ratio.folded"
    local code, stdout, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "5", "-F", "999",
      "--no-kernel", "-o", out })
    assert.same(0, code, stderr)
    assert.matches("samples", stdout)
    local leaves, seen = by_leaf(e2e.read_all(out))
    assert.is_true(seen.main, "main should be on the stacks")
    assert.is_truthy(leaves.burn_alpha, "burn_alpha missing")
    assert.is_truthy(leaves.burn_beta, "burn_beta missing")
    local ratio = leaves.burn_alpha / leaves.burn_beta
    assert.is_true(ratio > 2.7 and ratio < 3.3, "alpha:beta = " .. ratio)
  end)

  it("finds the function an off-CPU workload sleeps in", function()
    if skip then return pending(skip) end
    local pid = spawn("sleeper", "30")
    local out = dir .. "/off.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "--off-cpu", "-p", tostring(pid), "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local text = e2e.read_all(out)
    assert.matches("nap_in_known_function", text)
    local _, seen = by_leaf(text)
    assert.is_true(seen.main)
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
    if skip then return pending(skip) end
    local pid = spawn("cpu_ratio", "30")
    local out = dir .. "/cpu.pb.gz"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local env = "HOME=" .. dir .. " GOPATH=" .. dir .. "/go GOCACHE=" .. dir .. "/gocache GOPROXY=off GOFLAGS=-mod=mod "
    local rc, top, err = e2e.run(env .. "go tool pprof -top " .. e2e.quote(out))
    assert.same(0, rc, err)
    assert.matches("burn_alpha", top)
    assert.matches("burn_beta", top)
  end)

  it("profiles every process into an SVG flame graph by default extension", function()
    if skip then return pending(skip) end
    spawn("cpu_ratio", "30")
    local out = dir .. "/all.svg"
    local code, stdout, stderr = e2e.moonrover({ "profile", "-d", "2", "-o", out })
    assert.same(0, code, stderr)
    local svg = e2e.read_all(out)
    assert.matches("^<%?xml", svg)
    assert.matches("<svg", svg)
    assert.matches("burn_alpha", svg)
    assert.matches("processes", stdout)
  end)

  it("names the frames of a process that exits during the profile", function()
    if skip then return pending(skip) end
    local pid = spawn("cpu_ratio", "1")
    local out = dir .. "/exit.folded"
    local code, _, stderr = e2e.moonrover({ "profile", "-p", tostring(pid), "-d", "3", "-o", out })
    assert.same(0, code, stderr)
    local leaves = by_leaf(e2e.read_all(out))
    assert.is_truthy(leaves.burn_alpha, "frames of the exited process should be named")
  end)

  it("keeps kernel frames unless --no-kernel", function()
    if skip then return pending(skip) end
    local pid = spawn("sleeper", "30")
    local with, without = dir .. "/k.folded", dir .. "/nok.folded"
    assert.same(0, (e2e.moonrover({ "profile", "--off-cpu", "-p", tostring(pid), "-d", "1", "-o", with })))
    assert.same(0, (e2e.moonrover({ "profile", "--off-cpu", "--no-kernel", "-p", tostring(pid), "-d", "1",
      "-o", without })))
    assert.matches("_%[k%]", e2e.read_all(with))
    assert.not_matches("_%[k%]", e2e.read_all(without))
  end)

  it("fails with one clear line for an unknown pid or an unwritable output", function()
    if skip then return pending(skip) end
    local code, _, stderr = e2e.moonrover({ "profile", "-p", "4000000", "-d", "1", "-o", dir .. "/x.svg" })
    assert.same(1, code)
    assert.same("moonrover profile: no process with pid 4000000\n", stderr)
    code, _, stderr = e2e.moonrover({ "profile", "-d", "1", "-o", "/proc/nonexistent/x.svg" })
    assert.same(1, code)
    assert.matches("^moonrover profile: cannot write /proc/nonexistent/x.svg", stderr)
    assert.same(1, select(2, stderr:gsub("\n", "")))
  end)

  it("tells a user without privileges to run it as root", function()
    if skip then return pending(skip) end
    local env, bin = e2e.public_copy(dir)
    local code, _, stderr = e2e.run(env .. "setpriv --reuid=nobody --regid=nogroup --clear-groups " ..
      bin .. " profile -d 1 -o /tmp/never.svg")
    assert.same(1, code, stderr)
    assert.matches("^moonrover profile: profiling needs root", stderr)
    assert.same(1, select(2, stderr:gsub("\n", "")))
  end)
end)

describe("the profiler object (end to end)", function()
  it("releases every file descriptor when closed", function()
    if skip then return pending(skip) end
    local profiler = require("moonrover.profiler")
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
    if skip then return pending(skip) end
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
    for _, opt in ipairs({ "--pid", "--duration", "--frequency", "--off-cpu", "--output", "--format", "--no-kernel" }) do
      assert.matches(opt:gsub("%-", "%%-"), stdout)
    end
    code = e2e.moonrover({ "frobnicate" })
    assert.same(2, code)
  end)
end)
