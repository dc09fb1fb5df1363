-- agent_run.lua - runs `moonrover agent` in the background for end-to-end
-- specs: start with a scripts directory, read its metrics over HTTP, signal
-- it, wait (bounded) for conditions, stop it.
local e2e = require("support.e2e")

local _M = {}
local Agent = {}
Agent.__index = Agent

-- Waits until fn() returns a true value, polling every 0.1 s at most
-- `tries` times; returns that value or nil.
function _M.wait_for(fn, tries)
  for _ = 1, tries or 100 do
    local v = fn()
    if v then
      return v
    end
    os.execute("sleep 0.1")
  end
  return nil
end

function _M.start(dir, scripts, extra)
  local self = setmetatable({ dir = dir, log = dir .. "/agent.log", pid_file = dir .. "/agent.pid",
    exit_file = dir .. "/agent.exit" }, Agent)
  local cmd = string.format(
    "(%s agent --http 127.0.0.1:0 --pid-file %s --scripts %s %s >%s 2>&1; echo $? >%s) >/dev/null 2>&1 &",
    e2e.quote(e2e.bin), e2e.quote(self.pid_file), e2e.quote(scripts), extra or "", e2e.quote(self.log),
    e2e.quote(self.exit_file))
  os.execute(cmd)
  self.pid = _M.wait_for(function() return tonumber(e2e.read_all(self.pid_file) or "") end, 100)
  self.port = _M.wait_for(function()
    return tonumber((e2e.read_all(self.log) or ""):match("on port (%d+)"))
  end, 100)
  return self
end

function Agent:log_text()
  return e2e.read_all(self.log) or ""
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
  local status = _M.wait_for(function() return tonumber(e2e.read_all(self.exit_file) or "") end, 100)
  if not status then
    self:signal("KILL")
  end
  self.pid = nil
  return status
end

return _M
