-- End-to-end specs for the agent's pid file and `moonrover reload`: one agent
-- per pid file, whose holder is named to a second; reload signals only the
-- agent that holds the file, never another moonrover command; a planted
-- link is refused, not followed.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local files = require("support.files")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- Longest a refused agent may take to say so (it stops before loading
-- anything); past it, it is taken to be running, and stopped.
local REFUSAL_S = 30

describe("the agent's pid file (end to end)", function()
  local env = agent_run.each_test(before_each, after_each)

  -- Runs an agent that should refuse to start; its exit code and output.
  local function refused_agent(pid_file)
    return e2e.run(string.format("timeout %d %s agent --http 127.0.0.1:0 --pid-file %s --scripts %s", REFUSAL_S,
      e2e.quote(e2e.bin), e2e.quote(pid_file), e2e.quote(env.scripts)))
  end

  it("lets one agent hold a pid file: a second names the first and stops, and reload still reaches the first",
    function()
      local agent = env:start()
      assert.is_truthy(agent.port, agent:log_text())
      local code, out, err = refused_agent(agent.pid_file)
      assert.same(1, code, out .. err)
      assert.same("moonrover agent: cannot use the pid file " .. agent.pid_file .. ": another agent (pid " ..
        agent.pid .. ") holds it; stop that one first, or give this one another pid file\n", err)
      assert.same(agent.pid .. "\n", e2e.read_all(agent.pid_file))
      local reload_code, reload_out, reload_err = e2e.moonrover({ "reload", "--pid-file", agent.pid_file })
      assert.same(0, reload_code, reload_err)
      assert.same("the agent (pid " .. agent.pid .. ") reloaded its scripts: loaded 1 script(s)\n", reload_out)
      assert.is_truthy(agent_run.wait_for(function() return agent:log_text():match("SIGHUP: reloading") end),
        agent:log_tail())
    end)

  it("does not signal a moonrover profile that a pid file names", function()
    local pid_file, out = env.dir .. "/not-an-agent.pid", env.dir .. "/p.folded"
    os.execute(string.format("sh -c 'echo $$ > %s; exec %s profile -d 3 -o %s' >/dev/null 2>&1 &",
      e2e.quote(env.dir .. "/profile.pid"), e2e.quote(e2e.bin), e2e.quote(out)))
    local pid = agent_run.wait_for(function()
      local p = tonumber(e2e.read_all(env.dir .. "/profile.pid") or "")
      return p and (e2e.read_all("/proc/" .. p .. "/comm") or "") == "moonrover\n" and p
    end)
    assert.is_truthy(pid, "the profile did not start")
    env:kill_later(pid)
    files.write(pid_file, pid .. "\n")
    local code, _, err = e2e.moonrover({ "reload", "--pid-file", pid_file })
    assert.same(1, code)
    assert.same("moonrover reload: process " .. pid .. ", which " .. pid_file .. " names, does not hold that " ..
      "pid file: it is not the agent that wrote it (another command, or a reused pid)\n", err)
    assert.is_truthy(agent_run.wait_for(function() return e2e.read_all(out) end),
      "the profile should finish and write its output")
  end)

  it("refuses a pid file path that is another user's link in /tmp, writing nothing through it", function()
    local tmp, victim = env.dir .. "/tmp", env.dir .. "/victim"
    files.write(victim, "precious\n")
    assert.same(0, (e2e.run("mkdir -m 1777 " .. tmp .. " && ln -s " .. victim .. " " .. tmp .. "/agent.pid" ..
      " && chown -h nobody " .. tmp .. "/agent.pid")))
    local code, out, err = refused_agent(tmp .. "/agent.pid")
    assert.same(1, code, out .. err)
    assert.same("moonrover agent: cannot use the pid file " .. tmp .. "/agent.pid: it is a symbolic link " ..
      "(not followed)\n", err)
    assert.same("precious\n", e2e.read_all(victim))
    assert.same(victim .. "\n", select(2, e2e.run("readlink " .. tmp .. "/agent.pid")))
  end)
end)
