-- rover_run.lua - the Rover drop-in against the stand-in OAP for end-to-end
-- specs: its configuration written from a template and the agent started on
-- it, waits bounded by the drop-in's schedule that fail saying what the
-- stand-in and the agent had done, and the tear-down.
local agent_run = require("support.agent_run")
local assert = require("luassert")
local clock = require("support.clock")
local e2e = require("support.e2e")
local write = require("support.files").write

local _M = {}

-- Added to every deadline. Each step of the drop-in's schedule was seen
-- well under a second late on a 2-core machine with a busy loop per core and
-- other test suites running (load average 4 to 8); this is ten times that,
-- and short enough that a real failure is still reported in seconds.
_M.SLACK_S = 10

-- dir as a POSIX extended regex matching itself ("." taken literally).
function _M.literal(dir)
  return (dir:gsub("[.]", "[.]"))
end

-- Writes dir/rover.yaml from config, each <name> in it replaced by
-- values[name], and scripts (file name -> text) into dir/scripts; starts the
-- agent on them with the --config option and extra (more shell words);
-- how (optional): env and bin as agent_run.start takes them. Returns
-- the agent, having checked that it serves HTTP (an agent that does not is
-- stopped before the check fails, so that no case leaves one behind).
function _M.start_agent(dir, config, values, extra, scripts, how)
  local cfg = dir .. "/rover.yaml"
  write(cfg, (config:gsub("<(%w+)>", values)))
  os.execute("mkdir -p " .. e2e.quote(dir .. "/scripts"))
  for name, text in pairs(scripts or {}) do
    write(dir .. "/scripts/" .. name, text)
  end
  how = how or {}
  local agent = agent_run.start(dir, dir .. "/scripts", "--config " .. e2e.quote(cfg) .. " " .. (extra or ""),
    how.env, how.bin)
  if not agent.port then
    local log = agent:log_text()
    agent:stop()
    assert.is_truthy(agent.port, log)
  end
  return agent
end

-- Waits for fn() until `due` seconds from now (what the schedule allows)
-- plus SLACK_S; returns its value, or fails saying what it waited for, what
-- the stand-in OAP (stub, may be nil) had received, more() (optional: more
-- lines) and the agent's last log lines.
function _M.await(stub, agent, what, due, fn, more)
  local v = clock.wait_for(fn, due + _M.SLACK_S)
  if not v then
    assert.is_truthy(v, string.format("%s: not seen within %.1f s (due after %.1f s)\n%s\n%sagent log, last lines:\n%s",
      what, due + _M.SLACK_S, due, stub and stub:summary() or "no stand-in OAP", more and more() .. "\n" or "",
      agent:log_tail()))
  end
  return v
end

-- Stops the agent and the stand-in OAP, either of which may be nil.
function _M.stop(agent, stub)
  if agent then
    agent:stop()
  end
  if stub then
    stub:stop()
  end
end

return _M
