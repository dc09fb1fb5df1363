-- policy.lua - reads continuous-profiling policies: the ServiceWithPolicyJSON
-- argument of OAP's ContinuousProfilingPolicyQuery command, or the same
-- shape written in Lua by a user module. Each item is validated by Rover's
-- rules (Threshold not empty and readable by its check type, Period > 0,
-- 0 < Count <= Period); a bad item is left out with one line saying which
-- and why, and the rest of its policy still applies.
--
--   local services, problems = policy.parse(json_text, registry, compile_regex)
--   -- services: { { service = name, uuid = text, profiling = the raw object,
--   --              policies = { { target = "ON_CPU", items = {...} } } } }
--   -- item: { type, checker, threshold, period, count, uri_list (paths) or uri_regex (+ matcher) }
local json = require("moonrover.lib.json_decode")
local tables = require("moonrover.lib.tables")

local _M = {}

_M.TARGETS = { "ON_CPU", "OFF_CPU", "NETWORK" }

-- An integer given as a number (JSON) or as text, or nil.
local function count_field(v)
  local n = tonumber(v)
  if not n or n % 1 ~= 0 or (type(v) == "string" and not v:match("^%s*%-?%d+%s*$")) then
    return nil
  end
  return n
end

local function uris(item, compile, where)
  local list = {}
  for _, u in ipairs(type(item.URIList) == "table" and item.URIList or {}) do
    if type(u) == "string" and u ~= "" then
      list[#list + 1] = u
    end
  end
  if #list > 0 then
    return { uri_list = list }
  end
  local re = item.URIRegex
  if type(re) ~= "string" or re == "" then
    return {}
  end
  local matcher, err = compile(re)
  if not matcher then
    return nil, string.format("%s: URIRegex %q does not compile: %s", where, re, tostring(err))
  end
  return { uri_regex = re, matcher = matcher }
end

-- One item (a table with Threshold, Period, Count, URIList, URIRegex), or nil and why.
local function read_item(name, item, registry, compile, where)
  local checker = registry:get(name)
  if not checker then
    return nil, where .. ": unknown check type"
  end
  if type(item) ~= "table" then
    return nil, where .. ": not an object"
  end
  local text = item.Threshold
  if type(text) == "number" then
    text = tostring(text)
  end
  if type(text) ~= "string" or text == "" then
    return nil, where .. ": Threshold is empty"
  end
  local threshold, why = checker.threshold(text)
  if not threshold then
    return nil, string.format("%s: Threshold %s", where, why)
  end
  local period, count = count_field(item.Period), count_field(item.Count)
  if not period or period <= 0 then
    return nil, string.format("%s: Period must be a positive number of seconds, not %s", where, tostring(item.Period))
  end
  if not count or count <= 0 or count > period then
    return nil, string.format("%s: Count must be between 1 and Period (%d), not %s", where, period,
      tostring(item.Count))
  end
  local out, err = uris(checker.scope == "http" and item or {}, compile, where)
  if not out then
    return nil, err
  end
  out.type, out.checker, out.threshold, out.period, out.count = name, checker, threshold, period, count
  return out
end

local sorted_keys = tables.sorted_string_keys

-- The policies of one service from its Profiling object (target -> check
-- type -> item): a list of { target, items }, and the problems found.
function _M.read_profiling(service, profiling, registry, compile, problems)
  local policies = {}
  local known = {}
  for _, target in ipairs(_M.TARGETS) do
    known[target] = true
    local by_type = type(profiling) == "table" and profiling[target]
    if type(by_type) == "table" then
      local items = {}
      for _, name in ipairs(sorted_keys(by_type)) do
        local where = string.format("service %s, %s, %s", service, target, name)
        local item, why = read_item(name, by_type[name], registry, compile, where)
        items[#items + 1] = item
        problems[#problems + 1] = why
      end
      if #items > 0 then
        policies[#policies + 1] = { target = target, items = items }
      end
    end
  end
  for _, target in ipairs(sorted_keys(type(profiling) == "table" and profiling or {})) do
    if not known[target] then
      problems[#problems + 1] = string.format("service %s: unknown profiling target %s", service, target)
    end
  end
  return policies
end

-- Reads ServiceWithPolicyJSON: the services it names with their UUID and
-- policies (none when OAP deleted the service's policy), and the problems.
function _M.parse(text, registry, compile)
  local value, err = json.decode(text)
  if err then
    return nil, { "ServiceWithPolicyJSON is not JSON: " .. err }
  end
  if type(value) ~= "table" or (next(value) ~= nil and value[1] == nil) then
    return nil, { "ServiceWithPolicyJSON is not a list of services" }
  end
  local services, problems = {}, {}
  for i, s in ipairs(value) do
    if type(s) ~= "table" or type(s.ServiceName) ~= "string" or s.ServiceName == "" then
      problems[#problems + 1] = string.format("ServiceWithPolicyJSON item %d has no ServiceName", i)
    else
      services[#services + 1] = { service = s.ServiceName, uuid = type(s.UUID) == "string" and s.UUID or "",
        profiling = s.Profiling, policies = _M.read_profiling(s.ServiceName, s.Profiling, registry, compile, problems) }
    end
  end
  return services, problems
end

return _M
