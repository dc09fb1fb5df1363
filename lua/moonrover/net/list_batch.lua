-- list_batch.lua - the batches a script gets from the network tracer's
-- streams ("connection", "http"): plain Lua tables in batch.events[1 .. n]
-- (the script's to keep), or `for ev in batch:each()`. The agent hands them
-- to a script's handlers (agent.lua); scripts/bench/net_replay.lua does the
-- same outside an agent.
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

-- Calls each handler of list (may be nil) with events as one batch of stream.
function _M.deliver(list, stream, events)
  if not list then
    return
  end
  local batch = setmetatable({ n = #events, events = events, stream = stream }, ListBatch)
  for i = 1, #list do
    list[i](batch)
  end
end

return _M
