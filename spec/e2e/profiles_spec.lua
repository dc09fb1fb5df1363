-- End-to-end specs for moonrover.profiles: real BPF profiles of the compiled
-- workloads (built with frame pointers), driven by profiles.tick() as a
-- script's loop would, sharing, limits, the three output formats read back,
-- and a user script in `moonrover agent` that uses the module.
local agent_run = require("support.agent_run")
local clock = require("support.clock")
local e2e = require("support.e2e")
local files = require("support.files")
local lua_api_doc = require("support.lua_api_doc")
local folded = require("moonrover.profiler.writers.folded")
local profiles = require("moonrover.profiles")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- A profile's end is checked at each tick; 20 s leave room for a loaded
-- machine on top of the longest duration below.
local WAIT_S = 20

-- The Lua examples of docs/lua-api.md's "Profiles" section, in order.
local function doc_examples()
  return lua_api_doc.examples("## Profiles: `moonrover.profiles`")
end

local function wait_done(...)
  local handles = { ... }
  return clock.wait_for(function()
    for _, h in ipairs(handles) do
      if not h:done() then
        return false
      end
    end
    return true
  end, WAIT_S)
end

local function names(rows)
  local out = {}
  for _, row in ipairs(rows) do
    out[row.name] = row.value
  end
  return out
end

local function shell_ok(cmd)
  local code, out, err = e2e.run(cmd)
  assert.same(0, code, out .. err)
  return out
end

describe("moonrover.profiles (end to end)", function()
  local dir, pids

  before_each(function()
    dir, pids = e2e.tmpdir(), {}
  end)

  after_each(function()
    for _, pid in ipairs(pids) do
      e2e.kill(pid)
    end
    e2e.rmdir(dir)
    profiles.limits(require("moonrover.profiler.profile_limits").DEFAULTS)
  end)

  local function spawn(name, arg)
    local pid = e2e.spawn(name, arg)
    pids[#pids + 1] = pid
    return pid
  end

  it("finds a busy process's hot function in top(n) and calls on_done", function()
    local pid = spawn("cpu_ratio", "30")
    local told
    local h = assert(profiles.start({ pids = { pid }, duration = 2, frequency = 499, on_done = function(r, err)
      told = { r = r, err = err }
    end }))
    assert.is_truthy(wait_done(h), "the profile did not end")
    local r = assert(h:result())
    assert.same(r, told.r)
    assert.is_nil(told.err)
    assert.same("duration", r.ended)
    assert.is_true(r.total > 0)
    assert.is_truthy(names(r:top(5)).burn_alpha, "burn_alpha is not among the 5 hottest by self")
    assert.is_truthy(names(r:top(10, "total")).main)
    for s in r:stacks() do
      assert.same(pid, s.pid)
    end
  end)

  it("profiles a sleeper's blocked time off-CPU", function()
    local pid = spawn("sleeper", "30")
    local h = assert(profiles.start({ pids = { pid }, duration = 1, off_cpu = true }))
    assert.is_truthy(wait_done(h))
    local r = assert(h:result())
    assert.same("nanoseconds", r.unit)
    assert.is_true(r.total > 0)
    assert.is_truthy(names(r:top(20, "total")).nap_in_known_function)
  end)

  it("runs two profiles of the same kind on one profiler, each with its own pids", function()
    local busy, other = spawn("cpu_ratio", "30"), spawn("cpu_ratio", "30")
    local a = assert(profiles.start({ pids = { busy }, duration = 2, frequency = 499 }))
    local b = assert(profiles.start({ pids = { other }, duration = 3, frequency = 499 }))
    local s = profiles.stats()
    assert.same(2, s.running)
    assert.same(1, s.profilers)
    assert.same(499, s.total_frequency)
    assert.is_truthy(wait_done(a, b))
    for h, pid in pairs({ [a] = busy, [b] = other }) do
      local r = assert(h:result())
      assert.is_true(r.total > 0)
      for st in r:stacks() do
        assert.same(pid, st.pid)
      end
    end
    s = profiles.stats()
    assert.same(0, s.running)
    assert.same(0, s.profilers)
  end)

  it("hands out what was counted since the last collect, adding up to the whole", function()
    local pid = spawn("cpu_ratio", "30")
    local h = assert(profiles.start({ pids = { pid }, frequency = 499 }))
    local sum = 0
    assert.is_truthy(clock.wait_for(function()
      sum = sum + assert(h:collect()).total
      return sum > 0
    end, WAIT_S))
    local whole = h:stop()
    assert.same("stopped", whole.ended)
    sum = sum + assert(h:collect()).total
    assert.same(whole.total, sum)
    assert.same(0, assert(h:collect()).total)
  end)

  it("refuses what the limits do not allow, with a clear error, and counts it", function()
    local pid = spawn("cpu_ratio", "30")
    assert(profiles.limits({ max_profiles = 1, max_frequency = 200, max_total_frequency = 300 }))
    local before = profiles.stats()
    local none, err = profiles.start({ pids = { pid }, frequency = 201 })
    assert.is_nil(none)
    assert.same("frequency 201 Hz is above the limit (max_frequency = 200 Hz)", err)
    local h = assert(profiles.start({ pids = { pid }, frequency = 199 }))
    none, err = profiles.start({ pids = { pid }, off_cpu = true })
    assert.is_nil(none)
    assert.same("too many profiles: 1 running (limit max_profiles = 1)", err)
    assert(profiles.limits({ max_profiles = 2 }))
    none, err = profiles.start({ pids = { pid }, frequency = 102 })
    assert.is_nil(none)
    assert.matches("limit max_total_frequency = 300 Hz", err)
    h:stop()
    local after = profiles.stats()
    assert.same(before.refused + 3, after.refused)
    assert.same(before.started + 1, after.started)
    assert.same(before.finished + 1, after.finished)
    assert.same(2, after.limits.max_profiles)
  end)

  it("says why it cannot start a profile", function()
    local none, err = profiles.start({ pids = {} })
    assert.is_nil(none)
    assert.same("pids must be a non-empty list of process ids", err)
    none, err = profiles.start({ pids = { 1 }, duration = 0 })
    assert.is_nil(none)
    assert.matches("^duration must be a number of seconds above 0", err)
    none, err = profiles.start({ pids = { 1 }, freq = 99 })
    assert.is_nil(none)
    assert.matches("^unknown option 'freq'", err)
    none, err = profiles.start({ pids = { 2 ^ 22 + 1 } })
    assert.is_nil(none)
    assert.same("no process with pid " .. (2 ^ 22 + 1), err)
  end)

  it("writes folded, pprof and SVG files that read back", function()
    local pid = spawn("cpu_ratio", "30")
    local h = assert(profiles.start({ pids = { pid }, duration = 2, frequency = 499 }))
    assert.is_truthy(wait_done(h))
    local r = assert(h:result())
    assert(r:write(dir .. "/cpu.folded"))
    assert(r:write(dir .. "/cpu.pb.gz"))
    assert(r:write(dir .. "/cpu.svg"))
    local sum = 0
    for _, s in ipairs(folded.parse(files.read(dir .. "/cpu.folded"))) do
      sum = sum + s.count
    end
    assert.same(r.total, sum)
    local env = "HOME=" .. dir .. " GOPATH=" .. dir .. "/go GOCACHE=" .. dir .. "/gocache GOPROXY=off GOFLAGS=-mod=mod "
    local top = shell_ok(env .. "go tool pprof -top " .. e2e.quote(dir .. "/cpu.pb.gz"))
    assert.matches("burn_alpha", top)
    assert.matches("File: cpu_ratio\n", top, 1, true)
    shell_ok("xmllint --noout " .. e2e.quote(dir .. "/cpu.svg"))
    assert.matches("burn_alpha", files.read(dir .. "/cpu.svg"))
  end)

  it("runs in a user's agent script, driven by the agent's timer", function()
    local pid = spawn("cpu_ratio", "30")
    local scripts = agent_run.scripts_dir(dir)
    files.write(scripts .. "/profile_once.lua", string.format([[
local agent = require("moonrover.agent")
local profiles = require("moonrover.profiles")
assert(profiles.start({ pids = { %d }, duration = 1, frequency = 199, on_done = function(result, err)
  assert(result:write(%q))
  agent.log.info("profile done: %%d samples, hottest %%s", result.total, result:top(1)[1].name)
end }))
]], pid, dir .. "/agent.svg"))
    local agent = agent_run.start(dir, scripts)
    local done = agent_run.wait_for(function()
      return agent:log_text():match("profile done: %d+ samples")
    end, WAIT_S)
    agent:stop()
    assert.is_truthy(done, agent:log_tail())
    assert.matches("<svg", files.read(dir .. "/agent.svg"))
  end)

  it("runs the examples of docs/lua-api.md as they are written", function()
    local pid = spawn("cpu_ratio", "30")
    local scripts = agent_run.scripts_dir(dir)
    local examples = doc_examples()
    assert.same(7, #examples)
    for i, code in ipairs(examples) do
      -- the files go to this case's directory, not /tmp itself
      files.write(string.format("%s/example_%d.lua", scripts, i), (code:gsub("/tmp/", dir .. "/")))
    end
    local expected = { "profile of %d+ done: %d+ samples in 5%.0 s", "stopped after 3%.%d s: done true, %d+ samples",
      "last %d%.%d s: %d+ samples", "deepest stack: %d+ frames", "profile%.svg: written", "profile%.pb%.gz: written",
      "profile%.folded: written", "profile 3: too many profiles: 2 running %(limit max_profiles = 2%)",
      "2 running on 1 profiler%(s%) at 99 Hz; 1 refused" }
    local agent = agent_run.start(dir, scripts, nil, "PID=" .. pid)
    local seen = agent_run.wait_for(function()
      local log = agent:log_text()
      for _, pattern in ipairs(expected) do
        if not log:match(pattern) then
          return false
        end
      end
      return true
    end, WAIT_S)
    agent:stop()
    assert.is_truthy(seen, agent:log_tail())
    assert.is_nil(agent:log_text():match("error"), agent:log_tail())
    assert.matches("burn_alpha", files.read(dir .. "/profile.folded"))
  end)
end)
