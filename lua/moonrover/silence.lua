-- silence.lua - a cooldown keyed by whatever a policy chooses (a pid, a
-- process name, a policy and a process): after an action for a key, the key is
-- silenced for a while (docs/lua-api.md, "Windows and silence").
local _M = {}

local Silence = {}
Silence.__index = Silence

-- Seconds on the monotonic clock (the clock of agent.now()), read through the
-- runtime only when no clock was given.
local monotonic = require("moonrover.lib.clock").monotonic_s

local function check_seconds(seconds, what)
  if type(seconds) ~= "number" or seconds < 0 or seconds ~= seconds then
    error(what .. " must be a number of seconds >= 0, not " .. tostring(seconds), 3)
  end
end

-- new(seconds, now_fn): silences of seconds each; now_fn() gives the time in
-- seconds (default: the monotonic clock).
function _M.new(seconds, now_fn)
  check_seconds(seconds, "silence.new(seconds, now_fn): seconds")
  return setmetatable({ seconds = seconds, now = now_fn or monotonic, ends = {}, swept = nil }, Silence)
end

-- Forgets keys whose silence ended (at most once per silence length).
function Silence:sweep(now)
  if self.swept and now - self.swept < math.max(self.seconds, 1) then
    return
  end
  self.swept = now
  for key, ends in pairs(self.ends) do
    if ends <= now then
      self.ends[key] = nil
    end
  end
end

-- try(key [, seconds]): true, and key silenced for seconds (default: the
-- silence's own) from now, when key is not silenced; else false and the
-- seconds it remains silenced.
function Silence:try(key, seconds)
  if key == nil then
    error("try(key): key must not be nil", 2)
  end
  if seconds ~= nil then
    check_seconds(seconds, "try(key, seconds): seconds")
  end
  local now = self.now()
  local ends = self.ends[key]
  if ends and ends > now then
    return false, ends - now
  end
  self:sweep(now)
  self.ends[key] = now + (seconds or self.seconds)
  return true
end

-- remaining(key): the seconds key stays silenced (0 when it is not).
function Silence:remaining(key)
  local ends = key ~= nil and self.ends[key]
  if not ends then
    return 0
  end
  return math.max(0, ends - self.now())
end

-- clear(key): ends key's silence (for one, when the action it guarded never
-- happened).
function Silence:clear(key)
  if key ~= nil then
    self.ends[key] = nil
  end
end

local PLAIN = { string = true, number = true, boolean = true }

-- export(): the silences running now as plain data for agent.export:
-- { seconds = s, remaining = { { key, seconds left }, ... } }. Keys that are
-- not strings, numbers or booleans cannot cross a reload and are left out.
function Silence:export()
  local now, remaining = self.now(), {}
  for key, ends in pairs(self.ends) do
    if ends > now and PLAIN[type(key)] then
      remaining[#remaining + 1] = { key, ends - now }
    end
  end
  return { seconds = self.seconds, remaining = remaining }
end

-- import(data, now_fn): the silences export() gave data of, each with the
-- time it had left; now_fn as for new.
function _M.import(data, now_fn)
  if type(data) ~= "table" or type(data.remaining) ~= "table" then
    error("silence.import(data, now_fn): data must be what q:export() returned", 2)
  end
  local q = _M.new(data.seconds, now_fn)
  local now = q.now()
  for _, entry in ipairs(data.remaining) do
    q.ends[entry[1]] = now + entry[2]
  end
  return q
end

return _M
