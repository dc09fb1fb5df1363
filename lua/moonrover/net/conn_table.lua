-- conn_table.lua - the tracer's connections by id (the socket cookie),
-- bounded: past max entries the least recently used tenth is evicted at
-- once (a sort, rare), and evictions are counted. Entries are plain tables,
-- so the whole table can be handed to the next version of a script at a hot
-- reload (state() / the `from` argument of new()).
local _M = {}
local mt = { __index = _M }

-- max: the most connections held; from: a state() of an earlier table.
function _M.new(max, from)
  local self = setmetatable({ max = max, by_id = {}, count = 0, evicted = 0 }, mt)
  if from then
    for id, conn in pairs(from.by_id) do
      self.by_id[id] = conn
      self.count = self.count + 1
    end
    self.evicted = from.evicted or 0
  end
  return self
end

function _M:get(id)
  return self.by_id[id]
end

-- Evicts the least recently seen tenth of the connections; returns them.
function _M:evict_oldest()
  local list = {}
  for _, conn in pairs(self.by_id) do
    list[#list + 1] = conn
  end
  table.sort(list, function(a, b)
    return a.last_ns < b.last_ns
  end)
  local gone = {}
  for i = 1, math.max(1, math.floor(#list / 10)) do
    gone[i] = list[i]
    self:remove(list[i].id)
    self.evicted = self.evicted + 1
  end
  return gone
end

-- Adds conn (with conn.id and conn.last_ns); returns the connections evicted
-- to make room, or nil.
function _M:add(conn)
  local gone
  if self.count >= self.max then
    gone = self:evict_oldest()
  end
  self.by_id[conn.id] = conn
  self.count = self.count + 1
  return gone
end

function _M:remove(id)
  if self.by_id[id] then
    self.by_id[id] = nil
    self.count = self.count - 1
  end
end

function _M:each()
  return pairs(self.by_id)
end

function _M:state()
  return { by_id = self.by_id, evicted = self.evicted }
end

return _M
