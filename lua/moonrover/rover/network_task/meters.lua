-- meters.lua - the rover_net_p_* meters of a NETWORK task, as per-interval
-- deltas grouped by traffic (traffic.lua): what take() returns was counted
-- since the previous take(), and is gone from here afterwards. Names, units
-- and buckets are Rover's, so that OAP's rules for Rover's network profiling
-- read them unchanged:
--   <role>_{connect,close,retransmit}_counts_counter, <role>_{write,read}_bytes_counter
--   <role>_connect_exe_time_counter (average ns), <role>_connect_exe_time_histogram (ns)
--   http1_request_counter, http1_response_status_counter{code},
--   http1_<role>_duration_avg (ms) and _histogram, http1_{request,response}_package_size_avg
--   and _histogram (bytes)
-- A counter or average is sent only when it is not zero; an HTTP histogram
-- with every bucket (bucket = the lower bound), an L4 histogram with its
-- non-empty buckets only, as Rover sends them.
local _M = {}
local mt = { __index = _M }

-- Milliseconds.
_M.DURATION_BUCKETS = { 1, 2, 5, 10, 15, 20, 25, 30, 40, 45, 50, 60, 65, 70, 80, 90, 100, 110, 130, 150, 170, 200,
  230, 260, 290, 330, 380, 430, 480, 500, 600, 700, 800, 900, 1000, 1100, 1300, 1500, 1800, 2000, 5000, 10000,
  15000, 20000, 30000 }
-- Bytes.
_M.SIZE_BUCKETS = { 256, 512, 1048, 1536, 2048, 3072, 5120, 8192, 10240, 15360, 20480, 35840, 51200, 76800, 102400,
  204800, 512000, 819200, 1048576, 1572864, 2097152, 5242880, 10485760, 20971520, 52428800 }
-- Nanoseconds.
_M.EXE_TIME_BUCKETS = { 0, 10e3, 50e3, 100e3, 500e3, 1e6, 1.2e6, 1.5e6, 1.7e6, 2e6, 2.5e6, 3e6, 5e6, 7e6, 10e6, 13e6,
  16e6, 20e6, 25e6, 30e6, 35e6, 40e6, 45e6, 50e6, 70e6, 100e6, 150e6, 200e6, 300e6, 500e6, 1e9, 2e9, 3e9, 5e9 }

-- The bucket of v: the last whose lower bound v reaches (the first when v
-- is below them all).
function _M.bucket(bounds, v)
  local lo, hi = 1, #bounds
  while lo < hi do
    local mid = math.ceil((lo + hi) / 2)
    if bounds[mid] <= v then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

local function histogram()
  return {}
end

local function observe(h, bounds, v)
  local i = _M.bucket(bounds, v)
  h[i] = (h[i] or 0) + 1
end

-- prefix: profiling.task.network.meter_prefix (rover_net_p).
function _M.new(prefix)
  return setmetatable({ prefix = prefix .. "_", groups = {}, order = {} }, mt)
end

local function new_group(member, labels, role)
  return {
    member = member, labels = labels, role = role,
    requests = 0, status = {}, duration_sum = 0, duration_hist = histogram(),
    request_size_sum = 0, request_hist = histogram(), response_size_sum = 0, response_hist = histogram(),
    write_bytes = 0, read_bytes = 0, connects = 0, connect_ns_sum = 0, connect_hist = histogram(),
    closes = 0, retransmits = 0,
  }
end

local function group(self, key, member, labels, role)
  local g = self.groups[key]
  if not g then
    g = new_group(member, labels, role)
    self.groups[key] = g
    self.order[#self.order + 1] = key
  end
  return g
end

-- One HTTP exchange (request and response both seen) of member's traffic.
function _M:http(key, member, labels, role, ex)
  local g = group(self, key, member, labels, role)
  g.requests = g.requests + 1
  g.status[ex.status] = (g.status[ex.status] or 0) + 1
  local ms = math.floor(ex.duration_ns / 1e6)
  g.duration_sum = g.duration_sum + ms
  observe(g.duration_hist, _M.DURATION_BUCKETS, ms)
  g.request_size_sum = g.request_size_sum + ex.request_bytes
  observe(g.request_hist, _M.SIZE_BUCKETS, ex.request_bytes)
  g.response_size_sum = g.response_size_sum + ex.response_bytes
  observe(g.response_hist, _M.SIZE_BUCKETS, ex.response_bytes)
end

-- A connection's counts since the last take (connections.lua's interval).
function _M:l4(key, member, labels, role, c)
  local g = group(self, key, member, labels, role)
  g.write_bytes = g.write_bytes + c.write_bytes
  g.read_bytes = g.read_bytes + c.read_bytes
  g.connects = g.connects + c.connects
  g.connect_ns_sum = g.connect_ns_sum + c.connect_ns_sum
  for _, ns in ipairs(c.connect_ns) do
    observe(g.connect_hist, _M.EXE_TIME_BUCKETS, ns)
  end
  g.closes = g.closes + c.closes
  g.retransmits = g.retransmits + c.retransmits
end

local function single(out, name, labels, value)
  if value ~= 0 then
    out[#out + 1] = { singleValue = { name = name, labels = labels, value = value } }
  end
end

local function histogram_meter(out, name, labels, bounds, h, all)
  if next(h) == nil then
    return
  end
  local values = {}
  for i, bound in ipairs(bounds) do
    if all or h[i] then
      values[#values + 1] = { bucket = bound, count = h[i] or 0 }
    end
  end
  out[#out + 1] = { histogram = { name = name, labels = labels, values = values } }
end

local function with_code(labels, code)
  local out = {}
  for i, l in ipairs(labels) do
    out[i] = l
  end
  out[#out + 1] = { name = "code", value = tostring(code) }
  return out
end

local function l4_meters(out, p, g)
  local r, labels = p .. g.role .. "_", g.labels
  single(out, r .. "write_bytes_counter", labels, g.write_bytes)
  single(out, r .. "read_bytes_counter", labels, g.read_bytes)
  single(out, r .. "connect_counts_counter", labels, g.connects)
  if g.connects > 0 then
    single(out, r .. "connect_exe_time_counter", labels, g.connect_ns_sum / g.connects)
  end
  single(out, r .. "close_counts_counter", labels, g.closes)
  single(out, r .. "retransmit_counts_counter", labels, g.retransmits)
  histogram_meter(out, r .. "connect_exe_time_histogram", labels, _M.EXE_TIME_BUCKETS, g.connect_hist, false)
end

local function http_meters(out, p, g)
  if g.requests == 0 then
    return
  end
  local h, labels = p .. "http1_", g.labels
  single(out, h .. g.role .. "_duration_avg", labels, g.duration_sum / g.requests)
  histogram_meter(out, h .. g.role .. "_duration_histogram", labels, _M.DURATION_BUCKETS, g.duration_hist, true)
  single(out, h .. "request_counter", labels, g.requests)
  local codes = {}
  for code in pairs(g.status) do
    codes[#codes + 1] = code
  end
  table.sort(codes)
  for _, code in ipairs(codes) do
    single(out, h .. "response_status_counter", with_code(labels, code), g.status[code])
  end
  single(out, h .. "request_package_size_avg", labels, g.request_size_sum / g.requests)
  single(out, h .. "response_package_size_avg", labels, g.response_size_sum / g.requests)
  histogram_meter(out, h .. "request_package_size_histogram", labels, _M.SIZE_BUCKETS, g.request_hist, true)
  histogram_meter(out, h .. "response_package_size_histogram", labels, _M.SIZE_BUCKETS, g.response_hist, true)
end

-- The meters counted since the last take, as MeterDataCollection messages,
-- one per service instance; the first MeterData of each carries the
-- service, the instance and now_ms. Empty when nothing was counted.
function _M:take(now_ms)
  local by_instance, collections = {}, {}
  for _, key in ipairs(self.order) do
    local g = self.groups[key]
    local e = g.member.entity
    local ikey = e.serviceName .. "\0" .. e.instanceName
    local c = by_instance[ikey]
    if not c then
      c = { meterData = {}, service = e.serviceName, instance = e.instanceName }
      by_instance[ikey] = c
      collections[#collections + 1] = c
    end
    l4_meters(c.meterData, self.prefix, g)
    http_meters(c.meterData, self.prefix, g)
  end
  self.groups, self.order = {}, {}
  local out = {}
  for _, c in ipairs(collections) do
    local first = c.meterData[1]
    if first then
      first.service, first.serviceInstance, first.timestamp = c.service, c.instance, now_ms
      out[#out + 1] = { meterData = c.meterData }
    end
  end
  return out
end

return _M
