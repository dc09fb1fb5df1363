-- traced_services.lua - the setting of the network tracer's end-to-end specs:
-- for each case of a describe block, agent_run's directory, scripts folder
-- and agent, and two systemd-like services ("server" and "client"), all gone
-- after the case.
local agent_run = require("support.agent_run")
local servers = require("support.servers")

local _M = {}

local HOOKS = {
  set_up = function(env)
    env.server = servers.service(env.dir, "server")
    env.client = servers.service(env.dir, "client")
  end,
  tear_down = function(env)
    env.server:remove()
    env.client:remove()
  end,
}

-- Called in a describe block with busted's before_each and after_each: the
-- table its cases share (agent_run.each_test's, with server and client).
function _M.each_test(before_each, after_each)
  return agent_run.each_test(before_each, after_each, HOOKS)
end

return _M
