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

-- The log lines the tutorial quotes, without their times, and the policy it
-- has the reader save.
local function read_doc()
  local quoted, policy, block = {}, nil, nil
  for line in io.lines(DOC) do
    if line:match("^```") then
      if block and block[1] and block[1]:match("^%-%- long_failures%.lua") then
        policy = table.concat(block, "\n") .. "\n"
      end
      block = not block and {} or nil
    elseif block then
      block[#block + 1] = line
      if line:match(TIMESTAMP) then
        quoted[#quoted + 1] = line:gsub(TIMESTAMP, "")
      end
    end
  end
  return quoted, policy
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

describe("docs/writing-policies.md (end to end)", function()
  local dir, agent

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    if agent then
      agent:stop()
      agent = nil
    end
    e2e.rmdir(dir)
  end)

  it("runs as written, and the agent logs the lines it quotes", function()
    local quoted, policy = read_doc()
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
end)
