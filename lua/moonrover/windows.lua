-- windows.lua - sliding windows of one-second slots, for policies such as
-- "at least 3 of the last 5 seconds above 80 %" (docs/lua-api.md, "Windows and
-- silence"). Pure Lua: the caller gives the time, so any clock will do.
--
-- A window of n slots holds one value per second for the newest n seconds it
-- was given. Second s = floor(t) lives in slot s % n, tagged with s, so a slot
-- whose tag is not the second asked for holds no data for it: seconds with no
-- value are never "over", and old values are never read as new ones.
local _M = {}

local Window = {}
Window.__index = Window

local function check_count(n, what)
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then
    error(what .. " must be a whole number of slots >= 1, not " .. tostring(n), 3)
  end
end

-- new(n): an empty window of n one-second slots.
function _M.new(n)
  check_count(n, "windows.new(n): n")
  return setmetatable({ n = n, second = {}, value = {}, newest = nil }, Window)
end

-- The slot of second s, or nil when s is older than the window keeps.
function Window:slot(s)
  if self.newest and s <= self.newest - self.n then
    return nil
  end
  if not self.newest or s > self.newest then
    self.newest = s
  end
  return s % self.n + 1
end

-- add(t, value): the value of second floor(t) (t in seconds, wall or
-- monotonic); a later add in the same second replaces it. Values older than
-- the window are ignored. Returns the window.
function Window:add(t, value)
  local s = math.floor(t)
  local i = self:slot(s)
  if i then
    self.second[i], self.value[i] = s, value
  end
  return self
end

-- add_to(t, value): adds value to what second floor(t) holds (0 when none).
function Window:add_to(t, value)
  local s = math.floor(t)
  local i = self:slot(s)
  if i then
    if self.second[i] == s then
      self.value[i] = self.value[i] + value
    else
      self.second[i], self.value[i] = s, value
    end
  end
  return self
end

-- The value of second floor(t), or nil when it has none.
function Window:get(t)
  local s = math.floor(t)
  local i = s % self.n + 1
  if self.second[i] == s then
    return self.value[i]
  end
  return nil
end

-- Calls fn(value) for each second of the last p (at most n) ending at now
-- (default: the newest second given) that holds a value.
function Window:each(p, now, fn)
  local last = now and math.floor(now) or self.newest
  if not last then
    return
  end
  p = math.min(p or self.n, self.n)
  for s = last - p + 1, last do
    local i = s % self.n + 1
    if self.second[i] == s then
      fn(self.value[i])
    end
  end
end

-- How many of the last p seconds ending at now hold a value > threshold.
function Window:count_over(threshold, p, now)
  local count = 0
  self:each(p, now, function(v)
    if v > threshold then
      count = count + 1
    end
  end)
  return count
end

-- Whether at least c of the last p seconds ending at now are over threshold.
function Window:at_least(c, p, threshold, now)
  return self:count_over(threshold, p, now) >= c
end

-- The values of the last p seconds ending at now, sorted.
function Window:sorted(p, now)
  local values = {}
  self:each(p, now, function(v) values[#values + 1] = v end)
  table.sort(values)
  return values
end

-- The q-quantile (0 <= q <= 1; 0.99 for the 99th percentile, nearest rank) of
-- the values of the last p seconds ending at now; nil when there are none.
function Window:percentile(q, p, now)
  if type(q) ~= "number" or q < 0 or q > 1 then
    error("percentile(q, p, now): q must be a number from 0 to 1, not " .. tostring(q), 2)
  end
  local values = self:sorted(p, now)
  if #values == 0 then
    return nil
  end
  return values[math.max(1, math.ceil(q * #values))]
end

-- The mean of the values of the last p seconds ending at now; nil when none.
function Window:mean(p, now)
  local sum, count = 0, 0
  self:each(p, now, function(v) sum, count = sum + v, count + 1 end)
  if count == 0 then
    return nil
  end
  return sum / count
end

-- resize(n): n slots from now on, keeping the values of the newest n seconds.
function Window:resize(n)
  check_count(n, "resize(n): n")
  local second, value = self.second, self.value
  local old_n = self.n
  self.n, self.second, self.value = n, {}, {}
  for i = 1, old_n do
    local s = second[i]
    if s and s > self.newest - n then
      local j = s % n + 1
      self.second[j], self.value[j] = s, value[i]
    end
  end
  return self
end

-- export(): the window as plain data for agent.export (its values must be
-- plain data too): { n = n, slots = { { second, value }, ... } }.
function Window:export()
  local slots = {}
  for i = 1, self.n do
    if self.second[i] then
      slots[#slots + 1] = { self.second[i], self.value[i] }
    end
  end
  table.sort(slots, function(a, b) return a[1] < b[1] end)
  return { n = self.n, slots = slots }
end

-- import(data): the window that export() gave data of (after a hot reload).
function _M.import(data)
  if type(data) ~= "table" or type(data.slots) ~= "table" then
    error("windows.import(data): data must be what w:export() returned", 2)
  end
  local w = _M.new(data.n)
  for _, slot in ipairs(data.slots) do
    w:add(slot[1], slot[2])
  end
  return w
end

return _M
