-- traced_services.lua - the setting of the network tracer's end-to-end specs:
-- for each test of a describe block, a directory with a scripts folder, two
-- systemd-like services ("server" and "client") and at most one agent, all
-- gone after the test.
local agent_run = require("support.agent_run")
local e2e = require("support.e2e")
local servers = require("support.servers")

local _M = {}
local Env = {}
Env.__index = Env

-- Starts the agent on the test's directory and scripts with options (shell
-- words, as agent_run.start takes them); it is stopped after the test.
function Env:start(options)
  self.agent = agent_run.start(self.dir, self.scripts, options)
  return self.agent
end

local function set_up(env)
  env.dir = e2e.tmpdir()
  env.scripts = agent_run.scripts_dir(env.dir)
  env.server = servers.service(env.dir, "server")
  env.client = servers.service(env.dir, "client")
end

local function tear_down(env)
  if env.agent then
    env.agent:stop()
    env.agent = nil
  end
  env.server:remove()
  env.client:remove()
  e2e.rmdir(env.dir)
end

-- Called in a describe block with busted's before_each and after_each (a
-- spec's own, which a helper does not see): the table its tests share (dir,
-- scripts, server, client, and start), made anew before each test.
function _M.each_test(before_each, after_each)
  local env = setmetatable({}, Env)
  before_each(function()
    set_up(env)
  end)
  after_each(function()
    tear_down(env)
  end)
  return env
end

return _M
