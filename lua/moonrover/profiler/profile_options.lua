-- profile_options.lua - the options of moonrover.profiles' start(): checked
-- one by one, each problem said in one line, defaults filled in. Pure.
local C = require("moonrover.consts")

local _M = {}

local MAX_PIDS = C.MR_PID_FILTER_MAX -- the BPF profiler's pid set
local DEFAULT_FREQUENCY = 99
local OPTIONS = { pids = true, duration = true, frequency = true, off_cpu = true, kernel = true, on_done = true }

local function check_pids(pids)
  if type(pids) ~= "table" or #pids == 0 then
    return nil, "pids must be a non-empty list of process ids"
  end
  if #pids > MAX_PIDS then
    return nil, string.format("%d pids: a profile takes at most %d", #pids, MAX_PIDS)
  end
  local seen, out = {}, {}
  for _, pid in ipairs(pids) do
    if type(pid) ~= "number" or pid < 1 or pid ~= math.floor(pid) or pid > 0x7fffffff then
      return nil, "pids: " .. tostring(pid) .. " is not a process id"
    end
    if not seen[pid] then
      seen[pid] = true
      out[#out + 1] = pid
    end
  end
  table.sort(out)
  return out
end

local function check_fields(opts)
  for k in pairs(opts) do
    if not OPTIONS[k] then
      return nil, "unknown option '" .. tostring(k)
        .. "' (options: pids, duration, frequency, off_cpu, kernel, on_done)"
    end
  end
  local d, f = opts.duration, opts.frequency
  if d ~= nil and (type(d) ~= "number" or d ~= d or d <= 0 or d == math.huge) then
    return nil, "duration must be a number of seconds above 0 (or nil: until stopped), not " .. tostring(d)
  end
  if f ~= nil and (type(f) ~= "number" or f < 1 or f ~= math.floor(f)) then
    return nil, "frequency must be a whole number of Hz, at least 1, not " .. tostring(f)
  end
  for _, k in ipairs({ "off_cpu", "kernel" }) do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      return nil, k .. " must be true or false, not " .. tostring(opts[k])
    end
  end
  if opts.on_done ~= nil and type(opts.on_done) ~= "function" then
    return nil, "on_done must be a function, not " .. type(opts.on_done)
  end
  return true
end

-- The options with their defaults (pids sorted, without repeats), or nil
-- and the first problem.
function _M.check(opts)
  if type(opts) ~= "table" then
    return nil, "start(opts): opts must be a table"
  end
  local ok, err = check_fields(opts)
  if not ok then
    return nil, err
  end
  local pids
  pids, err = check_pids(opts.pids)
  if not pids then
    return nil, err
  end
  return {
    pids = pids,
    duration = opts.duration,
    off_cpu = opts.off_cpu == true,
    frequency = opts.off_cpu and 0 or (opts.frequency or DEFAULT_FREQUENCY),
    kernel = opts.kernel ~= false,
    on_done = opts.on_done,
  }
end

return _M
