-- messages.lua - the OAP messages of continuous profiling, built from what
-- the engine returns: the ContinuousProfilingPolicyQuery, the
-- ContinuousProfilingReport of a trigger (as Rover builds it) and the
-- MeterDataCollections of a check (one per service instance, every meter
-- carrying its service, instance and timestamp, as Rover sends them).
-- Tables shaped for moonrover.lib.protobuf: enums as numbers.
local checkers = require("moonrover.rover.continuous.checkers")
local json_text = require("moonrover.lib.json_text")

local _M = {}

-- queries: a list of { service, uuid }.
function _M.policy_query(queries)
  local list = {}
  for i, q in ipairs(queries) do
    list[i] = { serviceName = q.service, uuid = q.uuid or "" }
  end
  return { policies = list }
end

local function cause(c)
  local out = { type = checkers.CAUSES[c.checker.cause] }
  if c.checker.scope ~= "http" then
    out.singleValue = { threshold = c.threshold, current = c.current }
  elseif c.path then
    out.uri = { path = c.path, threshold = c.threshold, current = c.current }
  else
    out.uri = { regex = c.regex or "", threshold = c.threshold, current = c.current }
  end
  return out
end

-- The URIs a NETWORK task samples: one per URI cause ("" for a global one,
-- which stands for all and so is the only one).
function _M.sampling_uris(causes)
  local out, seen = {}, {}
  for _, c in ipairs(causes) do
    local uri = c.path or c.regex
    if uri == "" then
      return { "" }
    end
    if uri and not seen[uri] then
      seen[uri] = true
      out[#out + 1] = uri
    end
  end
  return out
end

local RULE_KEYS = { "URIRegex", "MinDuration", "When4xx", "When5xx" }
local SETTINGS_KEYS = { "RequireCompleteRequest", "MaxRequestSize", "RequireCompleteResponse", "MaxResponseSize" }
local SETTINGS = json_text.object(SETTINGS_KEYS, { RequireCompleteRequest = true, MaxRequestSize = -1,
  RequireCompleteResponse = true, MaxResponseSize = -1 })

-- The ExtensionConfigJSON of the NETWORK task a trigger starts, as Rover
-- builds it: one sampling rule per URI (every 4xx and 5xx, whole messages).
function _M.network_extension(causes)
  local rules = {}
  for i, uri in ipairs(_M.sampling_uris(causes)) do
    local rule = json_text.object(RULE_KEYS, { URIRegex = uri ~= "" and uri or nil, MinDuration = 0,
      When4xx = true, When5xx = true })
    rules[i] = rule:sub(1, -2) .. ',"Settings":' .. SETTINGS .. "}"
  end
  return '{"NetworkSamplings":[' .. table.concat(rules, ",") .. "]}"
end

-- The ContinuousProfilingReport of a trigger; duration in seconds.
function _M.report(trigger, duration)
  local main = trigger.main
  local causes = {}
  for i, c in ipairs(trigger.causes) do
    causes[i] = cause(c)
  end
  local r = { layer = main.layer, serviceName = main.service, instanceName = main.instance,
    processName = main.name, causes = causes, duration = duration }
  if trigger.target == "ON_CPU" then
    r.onCPU = {}
  elseif trigger.target == "OFF_CPU" then
    r.offCPU = {}
  else
    r.network = { samplingURIRegexes = _M.sampling_uris(trigger.all_causes) }
  end
  return r
end

-- The MeterDataCollections of a check's meters: prefix is the meter prefix
-- ("rover_con_p"), now_ms the timestamp.
function _M.meter_collections(meters, prefix, now_ms)
  local by_instance, order = {}, {}
  for _, m in ipairs(meters) do
    local key = m.service .. "\1" .. m.instance
    local c = by_instance[key]
    if not c then
      c = { meterData = {} }
      by_instance[key] = c
      order[#order + 1] = c
    end
    local labels = {}
    for _, name in ipairs({ "process_name", "layer", "uri" }) do
      if m.labels[name] then
        labels[#labels + 1] = { name = name, value = m.labels[name] }
      end
    end
    c.meterData[#c.meterData + 1] = { singleValue = { name = prefix .. "_" .. m.name, labels = labels,
      value = m.value }, service = m.service, serviceInstance = m.instance, timestamp = now_ms }
  end
  return order
end

return _M
