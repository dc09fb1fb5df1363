-- streams.lua - the agent's "connection" and "http" streams, handed to the
-- running NETWORK tasks: the drop-in's script subscribes once, when the
-- first task starts (so that an agent with no NETWORK task runs no tracer in
-- it), and every batch goes to each task listening then. A script cannot
-- unsubscribe: the tracer keeps running, with no one listening, until the
-- agent restarts or the script is reloaded.
local list = require("moonrover.lib.list")

local _M = {}
local mt = { __index = _M }

local STREAMS = { { "connection", "on_connection" }, { "http", "on_http" } }

-- on: agent.on.
function _M.new(on)
  return setmetatable({ on = on, subscribed = {}, runners = {} }, mt)
end

local function deliver(self, method)
  return function(batch)
    for _, r in ipairs(self.runners) do
      r[method](r, batch.events)
    end
  end
end

-- Makes runner hear the streams (r:on_connection(events), r:on_http(list)).
-- Returns true, or nil and why (the agent runs with --network off).
function _M:add(runner)
  for _, s in ipairs(STREAMS) do
    if not self.subscribed[s[1]] then
      local ok, err = pcall(self.on, s[1], deliver(self, s[2]))
      if not ok then
        return nil, "no network tracer: " .. tostring(err):gsub("^[^:]*:%d+: ", "")
      end
      self.subscribed[s[1]] = true
    end
  end
  self:remove(runner)
  self.runners[#self.runners + 1] = runner
  return true
end

-- Stops handing batches to runner (the subscription stays).
function _M:remove(runner)
  list.remove(self.runners, runner)
end

return _M
