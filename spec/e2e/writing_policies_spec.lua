-- The tutorial (docs/writing-policies.md) as a user follows it: its policies,
-- its steps, and every line of the agent's log it quotes, each compared with
-- a line the agent logged. The quoted lines are those of the tutorial's
-- code blocks marked ```log: every one of them, so that a change to what the
-- agent logs fails here until the tutorial says it too. The parts that vary
-- from run to run are the kinds VARYING lists (times, pids, ports, counts,
-- durations); the directories and the workload's name are the case's own.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local files = require("support.files")
local rt = require("moonrover.rt")

-- The tutorial's quoted lines (`started 2 of 2`, `loaded 3`) are those of an
-- agent whose network tracer runs: without it they differ, so the spec skips.
local function skip_reason()
  local why = e2e.skip_reason()
  if why then
    return why
  end
  local detail = rt.ffi.new("char[512]")
  if rt.lib.mr_kernel_check("network", detail, 512) ~= 1 then
    return "the tutorial runs the agent with the network tracer, which cannot run here: " .. rt.ffi.string(detail)
  end
  return nil
end

local it = require("support.skip").guard(it, pending, skip_reason())

local DOC = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/docs/writing-policies.md"
-- Where the tutorial keeps its policies and profiles (root's ~/policies and
-- ~/profiles), and the name of the workload chapters 7 to 9 watch.
local DOC_POLICIES = "/root/policies"
local DOC_PROFILES = "/root/profiles"
local DOC_NAME = "duty_cycle"
local TIMESTAMP = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ "
-- The tutorial runs the agent as its chapter 1 says: with the network tracer.
local AGENT_OPTIONS = "--network on --script-memory 1024"

local function escape(s)
  return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
end

-- What varies in a quoted line, as patterns over the line escaped by
-- escape(), and what stands for it in the agent's line.
local VARYING = {
  { "pid %d+", "pid %%d+" },
  { "port %d+", "port %%d+" },
  { "%d+%%%.%d+ (m?s)", "%%d+%%.%%d+ %1" },                 -- durations: 1.8 ms, 3.0 s
  { "in %d+ s at the earliest", "in %%d+ s at the earliest" }, -- a silence's time left
  { ": %d+ samples", ": %%d+ samples" },
  { "%%%-%d+%%%-%d+%%%.pb", "%%-%%d+%%-%%d+%%.pb" },         -- a profile's pid and time
}

-- The log lines the tutorial quotes (without their times) by chapter, and
-- the policies it has the reader save, by file name.
local function read_doc()
  local quoted, policies, block, chapter, kind = {}, {}, nil, 0, nil
  for line in io.lines(DOC) do
    chapter = tonumber(line:match("^## (%d+)%. ")) or chapter
    if line:match("^```") and not block then
      block, kind = {}, line:match("^```(%w*)")
    elseif line:match("^```") then
      local name = block[1] and block[1]:match("^%-%- ([%w_]+%.lua) %- ")
      if kind == "lua" and name then
        policies[name] = table.concat(block, "\n") .. "\n"
      end
      block = nil
    elseif block then
      block[#block + 1] = line
      if kind == "log" then
        assert(line:match(TIMESTAMP), "a line of a log block of the tutorial has no time: " .. line)
        quoted[chapter] = quoted[chapter] or {}
        table.insert(quoted[chapter], (line:gsub(TIMESTAMP, "")))
      end
    end
  end
  return quoted, policies
end

-- The quoted lines of chapters first to last, in order.
local function quoted_in(quoted, first, last)
  local out = {}
  for chapter = first, last do
    for _, line in ipairs(quoted[chapter] or {}) do
      out[#out + 1] = line
    end
  end
  return out
end

-- A quoted line as a pattern for the agent's: the parts that vary, and the
-- case's own directories (policies, profiles) and workload name.
local function pattern_of(line, own)
  local p = escape(line)
  for _, v in ipairs(VARYING) do
    p = p:gsub(v[1], v[2])
  end
  for _, doc_word in ipairs({ DOC_POLICIES, DOC_PROFILES, DOC_NAME }) do
    if own[doc_word] then
      p = p:gsub(escape(escape(doc_word)), function() return escape(own[doc_word]) end)
    end
  end
  return "^" .. p .. "$"
end

-- Checks that each quoted line is a line of the agent's log, each log line
-- standing for one quoted line at most.
local function assert_logged(agent, quoted, own)
  local lines = {}
  for line in agent:log_text():gmatch("[^\n]+") do
    lines[#lines + 1] = (line:gsub(TIMESTAMP, ""))
  end
  local used = {}
  for _, line in ipairs(quoted) do
    local pattern, found = pattern_of(line, own), nil
    for i, logged in ipairs(lines) do
      if not used[i] and logged:match(pattern) then
        found = i
        break
      end
    end
    assert.is_truthy(found, "the tutorial quotes\n  " .. line .. "\nbut the agent logged\n" .. agent:log_text())
    used[found] = true
  end
end

-- Chapters 7 to 9: a trigger needs 3 of 5 seconds, a profile takes 10 s;
-- 60 s leave room for a loaded machine.
local PROFILE_WAIT_S = 60
-- Long enough for the policy to have judged a process over a whole window.
local JUDGED_S = 8

-- Starts cmd in a session of its own whose CPU weight is raised (autogroup
-- nice -10), so that the machine's other work cannot take the workload's
-- CPU share below what it asks for; returns its pid.
local function start_weighted(cmd)
  local p = io.popen("setsid sh -c " .. e2e.quote("echo -10 > /proc/self/autogroup && exec " .. cmd)
    .. " >/dev/null 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

-- The profiles written for pid.
local function profiles_of(profiles, name, pid)
  local out = {}
  local p = io.popen("ls " .. e2e.quote(profiles))
  for file in p:lines() do
    if file:match("^" .. escape(name) .. "%-" .. pid .. "%-%d+%.pb%.gz$") then
      out[#out + 1] = file
    end
  end
  p:close()
  return out
end

describe("docs/writing-policies.md (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  it("runs as written, and the agent logs the lines it quotes", function()
    local all, saved = read_doc()
    local quoted, policy = quoted_in(all, 1, 6), saved["long_failures.lua"]
    assert.is_truthy(policy, "no long_failures.lua in the tutorial")
    assert.is_true(#quoted >= 6, "the tutorial quotes " .. #quoted .. " log lines")
    local policies = env.scripts

    -- 1. start the agent with the (empty) directory
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())

    -- 2 and 3. save the policy and load it without restarting
    files.write(policies .. "/long_failures.lua", policy)
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(0, code, out .. err)
    assert.matches("^the agent %(pid %d+%) reloaded its scripts: loaded 3 script%(s%)\n$", out)
    os.execute("sh -c 'sleep 3; exit 7'")
    assert.is_truthy(agent_run.wait_for(function()
      return (agent:metric('long_failures_total{comm="sh"}') or 0) >= 1
    end), agent:log_text())

    -- 4. make a mistake on purpose
    local broken = policy:gsub("local MIN_SECONDS = 2", "local MIN_SECONDS = = 2")
    assert.are_not.equal(policy, broken, "the tutorial's policy has no `local MIN_SECONDS = 2`")
    files.write(policies .. "/long_failures.lua", broken)
    code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(3, code, out .. err)
    assert.matches("^moonrover reload: the agent %(pid %d+%) refused the reload, its previous scripts keep running: ",
      err)
    assert.same(0, agent:metric("moonrover_reload_last_success"))
    assert.matches("last reload: failed: ", agent:get("/healthz"))

    assert_logged(agent, quoted, { [DOC_POLICIES] = policies })
  end)

  it("profiles a busy process as chapters 7 to 9 write it: once per silence, a new threshold at a reload", function()
    local all, policies = read_doc()
    local quoted, policy = quoted_in(all, 7, 9), policies["busy_profile.lua"]
    assert.is_truthy(policy, "no busy_profile.lua in the tutorial")
    assert.is_true(#quoted >= 8, "chapters 7 to 9 quote " .. #quoted .. " log lines")
    local policies_dir, profiles = env.scripts, env.dir .. "/profiles"
    -- the workload under a name of this case's own, so that no other test's is profiled
    local name = e2e.own_name(env.dir, "duty")
    local bin = env.dir .. "/" .. name
    assert.same(0, (e2e.run(string.format("mkdir -m 755 %s && cp %s %s", e2e.quote(profiles),
      e2e.quote(e2e.workloads .. "/" .. DOC_NAME), e2e.quote(bin)))))
    local own, n = policy:gsub('local NAME = "' .. DOC_NAME .. '"', 'local NAME = "' .. name .. '"')
    assert.same(1, n, "the tutorial's policy has no `local NAME = \"duty_cycle\"`")
    own = own:gsub(escape(DOC_PROFILES), function() return profiles end)

    -- 7 and 8. save the policy, load it, start a process that keeps a core busy
    local agent = env:start(AGENT_OPTIONS)
    files.write(policies_dir .. "/busy_profile.lua", own)
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(0, code, out .. err)
    local busy = start_weighted(e2e.quote(bin) .. " 100 120")
    env:kill_later(busy)
    assert.is_truthy(agent_run.wait_for(function() return #profiles_of(profiles, name, busy) == 1 end,
      PROFILE_WAIT_S), agent:log_tail())
    local held = "%(pid " .. busy .. "%) is still busy; next profile in %d+ s"
    assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match(held) end), agent:log_tail())
    local file = profiles .. "/" .. profiles_of(profiles, name, busy)[1]
    local go_env = "HOME=" .. env.dir .. " GOPATH=" .. env.dir .. "/go GOCACHE=" .. env.dir
      .. "/gocache GOPROXY=off GOFLAGS=-mod=mod "
    local rc, top, top_err = e2e.run(go_env .. "go tool pprof -top " .. e2e.quote(file))
    assert.same(0, rc, top_err)
    assert.matches("busy_phase", top)
    assert.matches("File: " .. name .. "\n", top, 1, true)

    -- 9. a process busy 70% of the time is left alone, until the threshold is 50%
    local steady = start_weighted(e2e.quote(bin) .. " 70 120")
    env:kill_later(steady)
    os.execute("sleep " .. JUDGED_S)
    assert.is_nil(agent:log_text():match("%(pid " .. steady .. "%) above"), agent:log_tail())
    local lowered
    lowered, n = own:gsub("local THRESHOLD = 0%.8", "local THRESHOLD = 0.5")
    assert.same(1, n, "the tutorial's policy has no `local THRESHOLD = 0.8`")
    files.write(policies_dir .. "/busy_profile.lua", lowered)
    code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file, "--timeout", "30s" })
    assert.same(0, code, out .. err)
    assert.is_truthy(agent_run.wait_for(function() return #profiles_of(profiles, name, steady) == 1 end,
      PROFILE_WAIT_S), agent:log_tail())
    -- the silence of the first came over the reload: held back again, no second file
    assert.is_truthy(agent_run.wait_for(function()
      local _, times = agent:log_text():gsub(held, "")
      return times == 2
    end), agent:log_tail())
    assert.same(1, #profiles_of(profiles, name, busy))

    assert_logged(agent, quoted, { [DOC_PROFILES] = profiles, [DOC_NAME] = name })
  end)
end)
