-- checkers.lua - the check types of continuous profiling: how each reads its
-- threshold, where its value comes from, the meter it reports and the cause
-- OAP is told. Rover's five are built in; a registry lets a user module add
-- its own (docs/rover-compatibility.md, "Adding a check type").
--
--   local reg = checkers.new()          -- the five of Rover
--   reg:add("PROCESS_RSS", { scope = "process", meter = "process_rss_mb", cause = "ProcessThreadCount",
--     threshold = checkers.number, value = function(sample) return sample.rss_bytes / 1048576 end })
--   local c = reg:get("PROCESS_CPU")
--
-- A checker:
--   scope      "process": value(sample, system) with sample one process's
--              facts from moonrover.processes' sampler ({ cpu, threads,
--              rss_bytes, ... }, cpu a share of one core);
--              "system": value(nil, system) with system = processes.system();
--              "http": value(slot) with slot one second of
--              moonrover.net.http_series ({ count, errors, latency_ms })
--   value      returns a number, or nil when there is none this second
--   threshold  reads the policy's Threshold text: a number, or nil and why
--   meter      the meter's name after the prefix (rover_con_p_)
--   cause      the ContinuousProfilingTriggeredMonitorType OAP is told
local _M = {}
local mt = { __index = _M }

-- The monitor types OAP knows (Continuous.proto), for causes.
_M.CAUSES = { ProcessCPU = 0, ProcessThreadCount = 1, SystemLoad = 2, HTTPErrorRate = 3, HTTPAvgResponseTime = 4 }

local SCOPES = { process = true, system = true, http = true }
local INT32_MAX = 2147483647

-- A base-10 integer that fits 32 bits, as Rover reads CPU and thread thresholds.
function _M.integer(text)
  local digits = type(text) == "string" and text:match("^[+-]?%d+$")
  local n = digits and tonumber(digits)
  if not n or n > INT32_MAX or n < -INT32_MAX - 1 then
    return nil, string.format("%q is not a 32-bit integer", tostring(text))
  end
  return n
end

-- A finite decimal number, as Rover reads load, error-rate and latency thresholds.
function _M.number(text)
  local n = type(text) == "string" and not text:find("%s") and tonumber(text)
  if not n or n ~= n or n == math.huge or n == -math.huge then
    return nil, string.format("%q is not a number", tostring(text))
  end
  return n
end

local function cpu_percent(sample)
  return sample.cpu and sample.cpu * 100
end

local function threads(sample)
  return sample.threads
end

local function load1(_, system)
  return system and system.load1
end

local function error_rate(slot)
  return slot.errors / slot.count * 100
end

local function avg_response_ms(slot)
  return slot.latency_ms / slot.count
end

local BUILT_IN = {
  PROCESS_CPU = { scope = "process", meter = "process_cpu", cause = "ProcessCPU", threshold = _M.integer,
    value = cpu_percent },
  PROCESS_THREAD_COUNT = { scope = "process", meter = "process_thread_count", cause = "ProcessThreadCount",
    threshold = _M.integer, value = threads },
  SYSTEM_LOAD = { scope = "system", meter = "system_load", cause = "SystemLoad", threshold = _M.number,
    value = load1 },
  HTTP_ERROR_RATE = { scope = "http", meter = "http_error_rate", cause = "HTTPErrorRate", threshold = _M.number,
    value = error_rate },
  HTTP_AVG_RESPONSE_TIME = { scope = "http", meter = "http_avg_response_time", cause = "HTTPAvgResponseTime",
    threshold = _M.number, value = avg_response_ms },
}

-- A registry holding Rover's five check types.
function _M.new()
  local self = setmetatable({ by_name = {} }, mt)
  for name, def in pairs(BUILT_IN) do
    assert(self:add(name, def))
  end
  return self
end

local function invalid(def)
  if type(def) ~= "table" then
    return "a checker is a table"
  end
  if not SCOPES[def.scope] then
    return "scope must be process, system or http, not " .. tostring(def.scope)
  end
  if type(def.value) ~= "function" or type(def.threshold) ~= "function" then
    return "value and threshold must be functions"
  end
  if type(def.meter) ~= "string" or not def.meter:match("^[%a_][%w_]*$") then
    return "meter must be a metric name, not " .. tostring(def.meter)
  end
  if not _M.CAUSES[def.cause] then
    return "cause must be one of OAP's monitor types (ProcessCPU, ProcessThreadCount, SystemLoad, "
      .. "HTTPErrorRate, HTTPAvgResponseTime), not " .. tostring(def.cause)
  end
  return nil
end

-- Adds (or replaces) check type `name`; true, or nil and why.
function _M:add(name, def)
  if type(name) ~= "string" or not name:match("^[%u_][%u%d_]*$") then
    return nil, "checker name must be upper case (like PROCESS_CPU), not " .. tostring(name)
  end
  local why = invalid(def)
  if why then
    return nil, "checker " .. name .. ": " .. why
  end
  self.by_name[name] = { name = name, scope = def.scope, meter = def.meter, cause = def.cause,
    threshold = def.threshold, value = def.value }
  return true
end

-- The checker named `name`, or nil.
function _M:get(name)
  return self.by_name[name]
end

return _M
