-- profile_limits.lua - what moonrover.profiles lets run at once: how many
-- profiles, how fast one samples, and how many samples a second (per CPU)
-- all its on-CPU profilers take together. Profiles that share a profiler
-- add nothing to the sampling rate. Pure: the caller says what runs.
local _M = {}

_M.DEFAULTS = {
  max_profiles = 64,          -- profiles running at once
  max_frequency = 1000,       -- Hz, one on-CPU profile
  max_total_frequency = 2000, -- Hz per CPU, every on-CPU profiler together
}

local function check_limit(name, v)
  if _M.DEFAULTS[name] == nil then
    return nil, "unknown limit '" .. tostring(name) .. "' (limits: max_profiles, max_frequency, max_total_frequency)"
  end
  if type(v) ~= "number" or v < 0 or v ~= math.floor(v) then
    return nil, "limit " .. name .. " must be a whole number >= 0, not " .. tostring(v)
  end
  return true
end

-- A copy of limits with the fields of changes applied, or nil and why
-- (nothing changed then).
function _M.apply(limits, changes)
  local out = {}
  for k, v in pairs(limits) do
    out[k] = v
  end
  for k, v in pairs(changes or {}) do
    local ok, err = check_limit(k, v)
    if not ok then
      return nil, err
    end
    out[k] = v
  end
  return out
end

-- running: { profiles = n, total_frequency = Hz, shared = whether opts join
-- a profiler that runs already }. true, or nil and why opts is refused.
function _M.check(limits, running, opts)
  if running.profiles >= limits.max_profiles then
    return nil, string.format("too many profiles: %d running (limit max_profiles = %d)", running.profiles,
      limits.max_profiles)
  end
  if opts.off_cpu then
    return true
  end
  if opts.frequency > limits.max_frequency then
    return nil, string.format("frequency %d Hz is above the limit (max_frequency = %d Hz)", opts.frequency,
      limits.max_frequency)
  end
  if not running.shared and running.total_frequency + opts.frequency > limits.max_total_frequency then
    return nil, string.format("sampling at %d Hz more would take the profilers to %d Hz per CPU "
      .. "(limit max_total_frequency = %d Hz)", opts.frequency, running.total_frequency + opts.frequency,
      limits.max_total_frequency)
  end
  return true
end

return _M
