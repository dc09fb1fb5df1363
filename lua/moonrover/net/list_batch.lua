-- list_batch.lua - the batches a script gets from the network tracer's
-- streams ("connection", "http"): plain Lua tables in batch.events[1 .. n],
-- or `for ev in batch:each()`; the script's to keep unless it reuses
-- exchanges (net/exchange.lua's reuse()), when the events and the batch are
-- valid only during the call and the batch of each stream is one table
-- reused. The agent hands them to a script's handlers (agent.lua);
-- scripts/bench/net_replay.lua does the same outside an agent.
local exchange = require("moonrover.net.exchange")

local _M = {}

local ListBatch = {}
ListBatch.__index = ListBatch

function ListBatch:each()
  local i, n, events = 0, self.n, self.events
  return function()
    i = i + 1
    if i <= n then
      return events[i]
    end
  end
end

-- The batch of each stream, when reused (module state: one per Lua state).
local reused = {}

-- Calls each handler of list (may be nil) with events as one batch of stream.
function _M.deliver(list, stream, events)
  if not list then
    return
  end
  local batch
  if exchange.reused() then
    batch = reused[stream] or setmetatable({ stream = stream }, ListBatch)
    reused[stream] = batch
    batch.n, batch.events = #events, events
  else
    batch = setmetatable({ n = #events, events = events, stream = stream }, ListBatch)
  end
  for i = 1, #list do
    list[i](batch)
  end
end

return _M
