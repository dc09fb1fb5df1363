-- sampling.lua - which HTTP exchanges of a NETWORK task are sampled as
-- traces, by the task's rules (ExtensionConfigJSON's NetworkSamplings), as
-- Rover samples them: only requests carrying a SkyWalking (sw8) or Zipkin
-- (b3, X-B3-TraceId) trace header; the rule is chosen by the request's path
-- (query cut): the last regex rule that matches, else the rule without a
-- regex; then the first of 5xx (When5xx), 4xx (When4xx) and slow (a
-- MinDuration in ms the exchange reached). Of each kind, the 10 slowest of
-- each process are kept per report interval, as copies (exchange.copy):
-- the tracer may reuse an exchange once the handler that offered it
-- returned (docs/lua-api.md).
--
-- A rule: { URIRegex (absent: the default rule), MinDuration (ms, absent: no
-- slow sampling), When4xx, When5xx, Settings = { RequireCompleteRequest,
-- MaxRequestSize, RequireCompleteResponse, MaxResponseSize } }.
local exchange = require("moonrover.net.exchange")
local http_series = require("moonrover.net.http_series")
local json = require("moonrover.lib.json_decode")

local _M = {}
local mt = { __index = _M }

_M.TOP_N = 10
local CACHE_SIZE = 200 -- paths whose rule is remembered
local PROVIDERS = { sw8 = "skywalking", b3 = "zipkin", ["x-b3-traceid"] = "zipkin" }

local function parse_rules(text)
  if text == nil then
    return {}
  end
  local cfg, err = json.decode(text)
  if err then
    return nil, "ExtensionConfigJSON is not JSON: " .. err
  end
  if type(cfg) ~= "table" or cfg.NetworkSamplings == nil then
    return {}
  end
  if type(cfg.NetworkSamplings) ~= "table" then
    return nil, "ExtensionConfigJSON's NetworkSamplings is not a list"
  end
  return cfg.NetworkSamplings
end

-- extension_json: the task's (nil: no sampling); deps.regex(pattern) ->
-- matcher (:match(s) -> nil when it does not match) or nil, err. Returns
-- the sampler and the problems found (rules left out), or nil, err.
function _M.new(extension_json, deps)
  local rules, err = parse_rules(extension_json)
  if not rules then
    return nil, err
  end
  local self = setmetatable({ regex_rules = {}, cache = {}, cached = 0, kept = {} }, mt)
  local problems = {}
  for i, r in ipairs(rules) do
    if type(r) ~= "table" then
      problems[#problems + 1] = string.format("rule %d is not an object", i)
    elseif r.URIRegex == nil then
      if self.default then
        problems[#problems + 1] = string.format("rule %d: a second rule without URIRegex is ignored", i)
      else
        self.default = r
      end
    else
      local m, why = deps.regex(tostring(r.URIRegex))
      if m then
        self.regex_rules[#self.regex_rules + 1] = { matcher = m, rule = r }
      else
        problems[#problems + 1] = string.format("rule %d: URIRegex %q: %s", i, tostring(r.URIRegex), why)
      end
    end
  end
  return self, problems
end

-- The rule for path, or nil.
function _M:rule_for(path)
  if #self.regex_rules == 0 then
    return self.default
  end
  local rule = self.cache[path]
  if rule ~= nil then
    return rule or nil
  end
  rule = self.default
  for _, r in ipairs(self.regex_rules) do
    if r.matcher:match(path) then
      rule = r.rule
    end
  end
  if self.cached >= CACHE_SIZE then
    self.cache, self.cached = {}, 0
  end
  self.cache[path], self.cached = rule or false, self.cached + 1
  return rule
end

-- Why ex is sampled under rule ("status_5xx", "status_4xx", "slow"), or nil.
function _M.reason(rule, ex)
  local status = ex.status
  if rule.When5xx == true and status >= 500 and status < 600 then
    return "status_5xx"
  elseif rule.When4xx == true and status >= 400 and status < 500 then
    return "status_4xx"
  elseif type(rule.MinDuration) == "number" and rule.MinDuration <= math.floor(ex.duration_ns / 1e6) then
    return "slow"
  end
  return nil
end

-- The trace provider of ex's trace header (nil: not one Rover samples).
function _M.provider(ex)
  return ex.trace_id and PROVIDERS[ex.trace_header] or nil
end

-- Keeps the n slowest of list (sorted slowest first) with item added.
local function top(list, item, n)
  local i = #list + 1
  while i > 1 and list[i - 1].latency < item.latency do
    i = i - 1
  end
  if i <= n then
    table.insert(list, i, item)
    list[n + 1] = nil
  end
end

-- Looks at one complete exchange of member: kept when a rule samples it.
-- Returns the reason it was kept, or nil.
function _M:offer(member, ex)
  local provider = _M.provider(ex)
  if not provider then
    return nil
  end
  local path = http_series.path(ex.target) or ""
  local rule = self:rule_for(path)
  local reason = rule and _M.reason(rule, ex)
  if not reason then
    return nil
  end
  local key = member.pid .. "|" .. reason
  local list = self.kept[key]
  if not list then
    list = {}
    self.kept[key] = list
  end
  top(list, { member = member, ex = exchange.copy(ex), uri = path, reason = reason, provider = provider, rule = rule,
    latency = math.floor(ex.duration_ns / 1e6) }, _M.TOP_N)
  return reason
end

-- The samples kept since the last take: { member, ex, uri, reason,
-- provider, rule, latency (ms) }, slowest first within each process and kind.
function _M:take()
  local keys = {}
  for k in pairs(self.kept) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    for _, s in ipairs(self.kept[k]) do
      out[#out + 1] = s
    end
  end
  self.kept = {}
  return out
end

return _M
