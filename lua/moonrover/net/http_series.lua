-- http_series.lua - the network tracer's HTTP exchanges as per-process
-- one-second series: requests, errors (status >= 500) and the summed latency
-- of the exchanges each process answered as a server, overall and by path.
-- This is what Rover's HTTP checkers of continuous profiling watch; any
-- script fed by agent.on("http") can keep one.
--
--   local series = require("moonrover.net.http_series").new({ seconds = 60 })
--   agent.on("http", function(batch) series:feed(batch) end)
--   local s = series:slot(pid, second)          -- nil, or { count, errors, latency_ms }
--   local p = series:slot(pid, second, "/pay")  -- the same for one path
--
-- A second is floor(response_end_ns / 1e9) on the clock of agent.now().
-- Memory is bounded: `seconds` slots per process, `max_pids` processes (the
-- one heard from least recently is evicted for a new one) and `max_paths`
-- paths per process (a path not heard within the window makes room for a
-- new one; until then exchanges of further paths count in the totals only).
local _M = {}
local mt = { __index = _M }

local DEFAULTS = { seconds = 60, max_pids = 1000, max_paths = 100 }

-- new(opts): a series keeping opts.seconds seconds of opts.max_pids
-- processes and opts.max_paths paths each (DEFAULTS for those not given);
-- nil and why when one is not a positive integer.
function _M.new(opts)
  opts = opts or {}
  local self = setmetatable({ procs = {}, npids = 0, evicted = 0, paths_dropped = 0, ignored = 0 }, mt)
  for k, v in pairs(DEFAULTS) do
    local given = opts[k] == nil and v or opts[k]
    if type(given) ~= "number" or given < 1 or given % 1 ~= 0 then
      return nil, string.format("http_series.new: %s must be a positive integer, not %s", k, tostring(given))
    end
    self[k] = given
  end
  return self
end

local function new_slot(second)
  return { second = second, count = 0, errors = 0, latency_ms = 0 }
end

-- The slot of `second` in a ring of n slots, reset when it held an older second.
local function slot_in(ring, n, second)
  local i = second % n
  local s = ring[i]
  if not s then
    s = new_slot(second)
    ring[i] = s
  elseif s.second ~= second then
    s.second, s.count, s.errors, s.latency_ms = second, 0, 0, 0
  end
  return s
end

local function count_in(s, ex)
  s.count = s.count + 1
  if ex.status >= 500 then
    s.errors = s.errors + 1
  end
  s.latency_ms = s.latency_ms + (ex.duration_ns or 0) / 1e6
end

local function evict_oldest(self)
  local oldest_pid, oldest
  for pid, p in pairs(self.procs) do
    if not oldest or p.last < oldest then
      oldest_pid, oldest = pid, p.last
    end
  end
  self.procs[oldest_pid] = nil
  self.npids = self.npids - 1
  self.evicted = self.evicted + 1
end

local function process(self, pid, second)
  local p = self.procs[pid]
  if not p then
    if self.npids >= self.max_pids then
      evict_oldest(self)
    end
    p = { ring = {}, paths = {}, npaths = 0, last = second }
    self.procs[pid] = p
    self.npids = self.npids + 1
  end
  if second > p.last then
    p.last = second
  end
  return p
end

-- Forgets p's paths with no request in the window that ends at second, at
-- most once a second per process: paths made of ids (/user/123) come and go,
-- and must not keep a path a policy watches out for good.
local function sweep_paths(self, p, second)
  if p.swept == second then
    return
  end
  p.swept = second
  for path, ring in pairs(p.paths) do
    if ring.last <= second - self.seconds then
      p.paths[path] = nil
      p.npaths = p.npaths - 1
    end
  end
end

-- The slots of p's path (ring.last: its newest second), or nil when p has
-- max_paths paths heard within the window.
local function path_ring(self, p, path, second)
  local ring = p.paths[path]
  if not ring and p.npaths >= self.max_paths then
    sweep_paths(self, p, second)
  end
  if not ring and p.npaths < self.max_paths then
    ring = { last = second }
    p.paths[path] = ring
    p.npaths = p.npaths + 1
  end
  if ring and second > ring.last then
    ring.last = second
  end
  return ring
end

-- The request's path: its target without the query string.
function _M.path(target)
  return target and target:match("^[^?#]*") or nil
end

-- Takes one exchange (a table of the "http" stream). Only completed
-- exchanges a process answered as a server count; others are ignored.
function _M:add(ex)
  if ex.role ~= "server" or not ex.pid or ex.pid <= 0 or (ex.status or 0) <= 0 or not ex.response_end_ns then
    self.ignored = self.ignored + 1
    return
  end
  local second = math.floor(ex.response_end_ns / 1e9)
  local p = process(self, ex.pid, second)
  count_in(slot_in(p.ring, self.seconds, second), ex)
  local path = _M.path(ex.target)
  if path then
    local ring = path_ring(self, p, path, second)
    if ring then
      count_in(slot_in(ring, self.seconds, second), ex)
    else
      self.paths_dropped = self.paths_dropped + 1
    end
  end
end

-- Takes a batch of the "http" stream.
function _M:feed(batch)
  for _, ex in ipairs(batch.events) do
    self:add(ex)
  end
end

-- The totals of pid at second (of one path when given): a table
-- { count, errors, latency_ms } (the sum; divide by count for the mean),
-- or nil when nothing was counted then or it is no longer kept.
function _M:slot(pid, second, path)
  local p = self.procs[pid]
  local ring = p and (path and p.paths[path] or (not path and p.ring))
  local s = ring and ring[second % self.seconds]
  if s and s.second == second and s.count > 0 then
    return s
  end
  return nil
end

-- The pids kept, in no order.
function _M:pids()
  local out = {}
  for pid in pairs(self.procs) do
    out[#out + 1] = pid
  end
  return out
end

-- The paths pid answered (at most max_paths), in no order.
function _M:paths(pid)
  local out = {}
  local p = self.procs[pid]
  for path in pairs(p and p.paths or {}) do
    out[#out + 1] = path
  end
  return out
end

-- Forgets a process (it exited).
function _M:forget(pid)
  if self.procs[pid] then
    self.procs[pid] = nil
    self.npids = self.npids - 1
  end
end

-- { pids, evicted, paths_dropped, ignored }: how many processes are kept,
-- and how many processes, path counts and exchanges were left out.
function _M:stats()
  return { pids = self.npids, evicted = self.evicted, paths_dropped = self.paths_dropped, ignored = self.ignored }
end

return _M
