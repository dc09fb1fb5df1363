-- latency_histogram.lua - durations counted into logarithmic buckets (each
-- 2% wider than the one before), so that the percentiles of a trace of
-- millions of exchanges take a bounded memory: durations up to 1 us share
-- the first bucket, those of 1000 s or more the last, so that a histogram
-- holds at most MAX_BUCKETS (1048) counts; 1 us to 100 s takes about 930. A
-- percentile is the middle of its bucket, within 1% of the true value
-- (1000 s for the last bucket). Pure.
local tables = require("moonrover.lib.tables")

local _M = {}
local mt = { __index = _M }

local GROWTH = 1.02
local LOG_GROWTH = math.log(GROWTH)
local FLOOR_NS = 1000 -- shorter durations share the first bucket
local CEILING_NS = 1e12 -- longer ones share the last

local LAST = math.floor(math.log(CEILING_NS / FLOOR_NS) / LOG_GROWTH) + 1
_M.MAX_BUCKETS = LAST + 1

function _M.new()
  return setmetatable({ count = 0, buckets = {} }, mt)
end

local function bucket_of(ns)
  if ns <= FLOOR_NS then
    return 0
  end
  if ns >= CEILING_NS then
    return LAST
  end
  return math.floor(math.log(ns / FLOOR_NS) / LOG_GROWTH) + 1
end

-- The middle of bucket i, geometrically, in ns.
local function middle_of(i)
  if i == 0 or i == LAST then
    return i == 0 and FLOOR_NS or CEILING_NS
  end
  return FLOOR_NS * GROWTH ^ (i - 0.5)
end

function _M:add(ns)
  local i = bucket_of(ns)
  self.buckets[i] = (self.buckets[i] or 0) + 1
  self.count = self.count + 1
end

local function sorted_buckets(self)
  return tables.sorted_keys(self.buckets)
end

-- The durations (ns) at the fractions given (e.g. { 0.5, 0.9, 0.99 }, in
-- increasing order), by nearest rank; nil for each when nothing was added.
function _M:percentiles(fractions)
  local out, keys, seen, k = {}, sorted_buckets(self), 0, 1
  for j, f in ipairs(fractions) do
    local rank = math.max(1, math.ceil(f * self.count))
    while keys[k] and seen + self.buckets[keys[k]] < rank do
      seen = seen + self.buckets[keys[k]]
      k = k + 1
    end
    out[j] = keys[k] and middle_of(keys[k]) or nil
  end
  return out
end

return _M
