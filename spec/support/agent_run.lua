-- agent_run.lua - runs `moonrover agent` in the background for end-to-end
-- specs: start with a scripts directory, read its metrics over HTTP, signal
-- it, wait (bounded) for conditions, stop it.
local clock = require("support.clock")
local e2e = require("support.e2e")

local _M = {}
local Agent = {}
Agent.__index = Agent

-- Waits until fn() returns a true value, for at most `seconds` (default
-- 10); returns that value or nil. See clock.wait_for.
_M.wait_for = clock.wait_for

-- Creates dir/scripts with mode 755 (the agent refuses a scripts directory
-- others could write to) and returns its path.
function _M.scripts_dir(dir)
  local scripts = dir .. "/scripts"
  assert(os.execute("mkdir -m 755 " .. e2e.quote(scripts)) == 0, "cannot create " .. scripts)
  return scripts
end

-- How many times the plain string occurs in text (a log, say).
function _M.count(text, plain)
  local n, from = 0, 1
  while true do
    local at = text:find(plain, from, true)
    if not at then
      return n
    end
    n, from = n + 1, at + #plain
  end
end

-- Starts the agent with its files in dir and scripts as --scripts; extra:
-- more options (shell words); env: optional NAME=value words for its
-- environment; bin: optional shell words run in place of the moonrover
-- binary (a wrapper that sets the agent's mounts up, then runs it).
-- Without a --network option the agent runs without the network tracer:
-- the machine's traffic (other specs at the same time) must not change the
-- memory and the scripts of specs about something else.
function _M.start(dir, scripts, extra, env, bin)
  extra = extra or ""
  if not extra:find("--network", 1, true) then
    extra = extra .. " --network off"
  end
  local self = setmetatable({ dir = dir, log = dir .. "/agent.log", pid_file = dir .. "/agent.pid",
    exit_file = dir .. "/agent.exit" }, Agent)
  local cmd = string.format(
    "(%s%s agent --http 127.0.0.1:0 --pid-file %s --scripts %s %s >%s 2>&1; echo $? >%s) >/dev/null 2>&1 &",
    env and "env " .. env .. " " or "", bin or e2e.quote(e2e.bin), e2e.quote(self.pid_file), e2e.quote(scripts),
    extra or "", e2e.quote(self.log), e2e.quote(self.exit_file))
  os.execute(cmd)
  self.pid = _M.wait_for(function() return tonumber(e2e.read_all(self.pid_file) or "") end)
  self.port = _M.wait_for(function()
    return tonumber((e2e.read_all(self.log) or ""):match("on port (%d+)"))
  end)
  return self
end

function Agent:log_text()
  return e2e.read_all(self.log) or ""
end

-- The end of the log, its last `lines` lines (default 40), for failure
-- messages that must stay readable.
function Agent:log_tail(lines)
  local all = {}
  for line in self:log_text():gmatch("[^\n]+") do
    all[#all + 1] = line
  end
  return table.concat(all, "\n", math.max(1, #all - (lines or 40) + 1))
end

function Agent:get(path)
  local code, body = e2e.run("curl -s --max-time 5 http://127.0.0.1:" .. tostring(self.port) .. path)
  return code == 0 and body or nil
end

-- The value of one series on /metrics (name{labels} as written), or nil.
function Agent:metric(series)
  local body = self:get("/metrics") or ""
  local escaped = series:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?{}]", "%%%0")
  return tonumber(body:match("\n" .. escaped .. " ([%d%.e%+%-]+)"))
end

function Agent:signal(name)
  os.execute("kill -" .. name .. " " .. self.pid)
end

function Agent:alive()
  return os.execute("kill -0 " .. self.pid .. " 2>/dev/null") == 0
end

-- Stops the agent with SIGTERM; returns its exit status (nil if it hung and
-- had to be killed).
function Agent:stop()
  if not self.pid then
    return nil
  end
  self:signal("TERM")
  local status = _M.wait_for(function() return tonumber(e2e.read_all(self.exit_file) or "") end)
  if not status then
    self:signal("KILL")
  end
  self.pid = nil
  return status
end

local Env = {}
Env.__index = Env

-- Starts the agent on the case's directory and scripts folder, as _M.start
-- does with extra, env and bin; it is stopped after the case.
function Env:start(extra, env, bin)
  self.agent = _M.start(self.dir, self.scripts, extra, env, bin)
  return self.agent
end

-- Has the process pid (a workload the case started) killed after the case,
-- once the agent is stopped.
function Env:kill_later(pid)
  self.pids[#self.pids + 1] = pid
end

-- Called in a describe block with busted's before_each and after_each (a
-- spec's own, which a helper does not see): the table its cases share, made
-- anew before each case with dir (a temporary directory), scripts (its
-- scripts folder), start and kill_later. hooks.set_up(env), when given, adds
-- what the spec needs; after the case hooks.tear_down(env) ends it, then the
-- agent is stopped, the processes given to kill_later killed and dir removed.
function _M.each_test(before_each, after_each, hooks)
  hooks = hooks or {}
  local env = setmetatable({}, Env)
  before_each(function()
    env.dir = e2e.tmpdir()
    env.scripts = _M.scripts_dir(env.dir)
    env.pids = {}
    if hooks.set_up then
      hooks.set_up(env)
    end
  end)
  after_each(function()
    if hooks.tear_down then
      hooks.tear_down(env)
    end
    if env.agent then
      env.agent:stop()
      env.agent = nil
    end
    for _, pid in ipairs(env.pids) do
      e2e.kill(pid)
    end
    e2e.rmdir(env.dir)
  end)
  return env
end

return _M
