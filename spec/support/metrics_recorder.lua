-- metrics_recorder.lua - a metrics registry for unit specs, with the interface
-- of moonrover.agent's (counter, gauge, histogram, whose series keep their
-- values when asked for again), kept in Lua and rendered as Prometheus text
-- with each histogram's own buckets. It refuses what the agent refuses: a name
-- used with another type, a counter going down, and also a histogram asked
-- for with other buckets.
local _M = {}

-- The shortest %g text that reads back as v (1, 0.005, 2.5).
local function number(v)
  if v == math.huge then
    return "+Inf"
  end
  if v == math.floor(v) and math.abs(v) < 1e15 then
    return string.format("%d", v)
  end
  for prec = 1, 17 do
    local s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then
      return s
    end
  end
  return string.format("%.17g", v)
end

local function labels_text(labels)
  local keys = {}
  for k in pairs(labels or {}) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do
    parts[i] = string.format('%s="%s"', k, tostring(labels[k]):gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n"))
  end
  return table.concat(parts, ",")
end

local Recorder = {}
Recorder.__index = Recorder

function _M.new()
  local self = setmetatable({ metrics = {}, order = {} }, Recorder)
  for _, kind in ipairs({ "counter", "gauge", "histogram" }) do
    self[kind] = function(name, help, labels, buckets)
      return self:series(kind, name, help, labels, buckets)
    end
  end
  return self
end

function Recorder:series(kind, name, help, labels, buckets)
  local m = self.metrics[name]
  if not m then
    m = { kind = kind, help = help, series = {}, buckets = buckets }
    self.metrics[name] = m
    self.order[#self.order + 1] = name
  end
  if m.kind ~= kind then
    error(string.format('metric "%s" is a %s, not a %s', name, m.kind, kind))
  end
  if kind == "histogram" and table.concat(m.buckets or {}, " ") ~= table.concat(buckets or {}, " ") then
    error(string.format('histogram "%s" asked for with other buckets', name))
  end
  local text = labels_text(labels)
  local s = m.series[text]
  if not s then
    s = { value = 0, counts = {}, count = 0 }
    m.series[text] = s
  end
  if kind == "counter" then
    return {
      inc = function() s.value = s.value + 1 end,
      add = function(_, v)
        assert(type(v) == "number" and v >= 0, "counter:add(v): v must be a number >= 0")
        s.value = s.value + v
      end,
    }
  elseif kind == "gauge" then
    return { set = function(_, v) s.value = v end, add = function(_, v) s.value = s.value + v end }
  end
  return {
    observe = function(_, v)
      local bounds = m.buckets or {}
      local b = #bounds + 1
      for i, bound in ipairs(bounds) do
        if v <= bound then
          b = i
          break
        end
      end
      s.counts[b] = (s.counts[b] or 0) + 1
      s.count = s.count + 1
      s.value = s.value + v
    end,
  }
end

local function with_le(text, le)
  return "{" .. text .. (text == "" and "" or ",") .. 'le="' .. le .. '"}'
end

local function braces(text)
  return text == "" and "" or "{" .. text .. "}"
end

-- The sample lines of metric name, series sorted by their labels, or {}.
function Recorder:lines(name)
  local m = self.metrics[name]
  local out = {}
  if not m then
    return out
  end
  local texts = {}
  for text in pairs(m.series) do
    texts[#texts + 1] = text
  end
  table.sort(texts)
  for _, text in ipairs(texts) do
    local s = m.series[text]
    if m.kind ~= "histogram" then
      out[#out + 1] = name .. braces(text) .. " " .. number(s.value)
    else
      local bounds, total = m.buckets or {}, 0
      for i = 1, #bounds + 1 do
        total = total + (s.counts[i] or 0)
        out[#out + 1] = name .. "_bucket" .. with_le(text, number(bounds[i] or math.huge)) .. " " .. total
      end
      out[#out + 1] = name .. "_sum" .. braces(text) .. " " .. number(s.value)
      out[#out + 1] = name .. "_count" .. braces(text) .. " " .. s.count
    end
  end
  return out
end

-- The whole exposition: per metric its HELP and TYPE lines and its samples.
function Recorder:render()
  local out = {}
  for _, name in ipairs(self.order) do
    local m = self.metrics[name]
    out[#out + 1] = "# HELP " .. name .. " " .. (m.help or "")
    out[#out + 1] = "# TYPE " .. name .. " " .. m.kind
    for _, line in ipairs(self:lines(name)) do
      out[#out + 1] = line
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- The value of a counter or gauge series (nil when it was never created).
function Recorder:value(name, labels)
  local m = self.metrics[name]
  local s = m and m.series[labels_text(labels)]
  return s and s.value
end

-- How many series metric name has.
function Recorder:count(name)
  local n = 0
  for _ in pairs((self.metrics[name] or {}).series or {}) do
    n = n + 1
  end
  return n
end

return _M
