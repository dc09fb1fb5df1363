-- The tutorial (docs/writing-policies.md) as a user follows it: its policy,
-- its steps, and every log line it quotes, seen in the agent's log (times,
-- pids, ports and durations may differ; its directory is the case's own).
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local files = require("support.files")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local DOC = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/docs/writing-policies.md"
-- Where the tutorial keeps its policies (root's ~/policies).
local DOC_DIR = "/root/policies"
local TIMESTAMP = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ "

-- The log lines the tutorial quotes, without their times, by chapter, and
-- the policies it has the reader save, by file name.
local function read_doc()
  local quoted, policies, block, chapter = {}, {}, nil, 0
  for line in io.lines(DOC) do
    chapter = tonumber(line:match("^## (%d+)%. ")) or chapter
    if line:match("^```") then
      local name = block and block[1] and block[1]:match("^%-%- ([%w_]+%.lua) %- ")
      if name then
        policies[name] = table.concat(block, "\n") .. "\n"
      end
      block = not block and {} or nil
    elseif block then
      block[#block + 1] = line
      if line:match(TIMESTAMP) then
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

-- A quoted line as a pattern for the agent's: pids, ports and durations
-- vary, the tutorial's directory is dir.
local function pattern_of(line, dir)
  local p = line:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  p = p:gsub("pid %d+", "pid %%d+"):gsub("port %d+", "port %%d+")
  p = p:gsub("%d+%%%.%d+ (m?s)", "%%d+%%.%%d+ %1")
  local escaped_dir = dir:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  return "^" .. p:gsub(DOC_DIR, function() return escaped_dir end) .. "$"
end

local function log_lines(text)
  local lines = {}
  for line in text:gmatch("[^\n]+") do
    lines[#lines + 1] = line:gsub(TIMESTAMP, "")
  end
  return lines
end

local function seen(lines, pattern)
  for _, line in ipairs(lines) do
    if line:match(pattern) then
      return true
    end
  end
  return false
end


-- Chapters 7 to 9: where the policy writes its profiles, the workload it
-- watches for, and the waits. A trigger needs 3 of 5 seconds, a profile
-- takes 10 s; 60 s leave room for a loaded machine.
local DOC_PROFILES = "/root/profiles"
local DOC_NAME = "duty_cycle"
local PROFILE_WAIT_S = 60
-- Long enough for the policy to have judged a process over a whole window.
local JUDGED_S = 8

local function escape(s)
  return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
end

-- A line chapters 7 to 9 quote as a pattern for the agent's: pids, sample
-- counts, silences left and the times in file names vary; the directory and
-- the workload's name are the case's own.
local function profile_pattern(line, profiles, name)
  local p = escape(line)
  p = p:gsub("pid %d+", "pid %%d+"):gsub("in %d+ s at the earliest", "in %%d+ s at the earliest")
  p = p:gsub(": %d+ samples", ": %%d+ samples"):gsub("%%%-%d+%%%-%d+%%%.pb", "%%-%%d+%%-%%d+%%.pb")
  p = p:gsub(escape(escape(DOC_PROFILES)), function() return escape(profiles) end)
  p = p:gsub(escape(DOC_NAME), function() return escape(name) end)
  return "^" .. p .. "$"
end

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
  local dir, agent, workloads

  before_each(function()
    dir, workloads = e2e.tmpdir(), {}
  end)

  after_each(function()
    if agent then
      agent:stop()
      agent = nil
    end
    for _, pid in ipairs(workloads) do
      e2e.kill(pid)
    end
    e2e.rmdir(dir)
  end)

  it("runs as written, and the agent logs the lines it quotes", function()
    local all, saved = read_doc()
    local quoted, policy = quoted_in(all, 1, 6), saved["long_failures.lua"]
    assert.is_truthy(policy, "no long_failures.lua in the tutorial")
    assert.is_true(#quoted >= 6, "the tutorial quotes " .. #quoted .. " log lines")
    local policies = dir .. "/policies"
    os.execute("mkdir -p " .. e2e.quote(policies))

    -- 1. start the agent with the (empty) directory
    agent = agent_run.start(dir, policies)
    assert.is_truthy(agent.port, agent:log_text())

    -- 2 and 3. save the policy and load it without restarting
    files.write(policies .. "/long_failures.lua", policy)
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file })
    assert.same(0, code, out .. err)
    assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match("loaded 2 script%(s%)") end),
      agent:log_text())
    os.execute("sh -c 'sleep 3; exit 7'")
    assert.is_truthy(agent_run.wait_for(function()
      return (agent:metric('long_failures_total{comm="sh"}') or 0) >= 1
    end), agent:log_text())

    -- 4. make a mistake on purpose
    local broken = policy:gsub("local MIN_SECONDS = 2", "local MIN_SECONDS = = 2")
    assert.are_not.equal(policy, broken, "the tutorial's policy has no `local MIN_SECONDS = 2`")
    files.write(policies .. "/long_failures.lua", broken)
    code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file })
    assert.same(0, code, out .. err)
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("moonrover_reload_last_success") == 0 end),
      agent:log_text())
    assert.matches("last reload: failed: ", agent:get("/healthz"))

    local lines = log_lines(agent:log_text())
    for _, line in ipairs(quoted) do
      assert.is_true(seen(lines, pattern_of(line, policies)),
        "the tutorial quotes\n  " .. line .. "\nbut the agent logged\n" .. agent:log_text())
    end
  end)
  it("profiles a busy process as chapters 7 to 9 write it: once per silence, a new threshold at a reload", function()
    local all, policies = read_doc()
    local quoted, policy = quoted_in(all, 7, 9), policies["busy_profile.lua"]
    assert.is_truthy(policy, "no busy_profile.lua in the tutorial")
    assert.is_true(#quoted >= 8, "chapters 7 to 9 quote " .. #quoted .. " log lines")
    local policies_dir, profiles = dir .. "/policies", dir .. "/profiles"
    -- the workload under a name of this case's own, so that no other test's is profiled
    local name = e2e.own_name(dir, "duty")
    local bin = dir .. "/" .. name
    assert.same(0, (e2e.run(string.format("mkdir -m 755 %s %s && cp %s %s", e2e.quote(policies_dir),
      e2e.quote(profiles), e2e.quote(e2e.workloads .. "/" .. DOC_NAME), e2e.quote(bin)))))
    local own, n = policy:gsub('local NAME = "' .. DOC_NAME .. '"', 'local NAME = "' .. name .. '"')
    assert.same(1, n, "the tutorial's policy has no `local NAME = \"duty_cycle\"`")
    own = own:gsub(escape(DOC_PROFILES), function() return profiles end)

    -- 7 and 8. save the policy, load it, start a process that keeps a core busy
    agent = agent_run.start(dir, policies_dir)
    files.write(policies_dir .. "/busy_profile.lua", own)
    local code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file })
    assert.same(0, code, out .. err)
    local busy = start_weighted(e2e.quote(bin) .. " 100 120")
    workloads[#workloads + 1] = busy
    assert.is_truthy(agent_run.wait_for(function() return #profiles_of(profiles, name, busy) == 1 end,
      PROFILE_WAIT_S), agent:log_tail())
    local held = "%(pid " .. busy .. "%) is still busy; next profile in %d+ s"
    assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match(held) end), agent:log_tail())
    local file = profiles .. "/" .. profiles_of(profiles, name, busy)[1]
    local env = "HOME=" .. dir .. " GOPATH=" .. dir .. "/go GOCACHE=" .. dir .. "/gocache GOPROXY=off GOFLAGS=-mod=mod "
    local rc, top, top_err = e2e.run(env .. "go tool pprof -top " .. e2e.quote(file))
    assert.same(0, rc, top_err)
    assert.matches("busy_phase", top)
    assert.matches("File: " .. name .. "\n", top, 1, true)

    -- 9. a process busy 70% of the time is left alone, until the threshold is 50%
    local steady = start_weighted(e2e.quote(bin) .. " 70 120")
    workloads[#workloads + 1] = steady
    os.execute("sleep " .. JUDGED_S)
    assert.is_nil(agent:log_text():match("%(pid " .. steady .. "%) above"), agent:log_tail())
    local lowered
    lowered, n = own:gsub("local THRESHOLD = 0%.8", "local THRESHOLD = 0.5")
    assert.same(1, n, "the tutorial's policy has no `local THRESHOLD = 0.8`")
    files.write(policies_dir .. "/busy_profile.lua", lowered)
    code, out, err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file })
    assert.same(0, code, out .. err)
    assert.is_truthy(agent_run.wait_for(function() return #profiles_of(profiles, name, steady) == 1 end,
      PROFILE_WAIT_S), agent:log_tail())
    -- the silence of the first came over the reload: held back again, no second file
    assert.is_truthy(agent_run.wait_for(function()
      local _, times = agent:log_text():gsub(held, "")
      return times == 2
    end), agent:log_tail())
    assert.same(1, #profiles_of(profiles, name, busy))

    local lines = log_lines(agent:log_text())
    for _, line in ipairs(quoted) do
      assert.is_true(seen(lines, profile_pattern(line, profiles, name)),
        "the tutorial quotes\n  " .. line .. "\nbut the agent logged\n" .. agent:log_text())
    end
  end)
end)
