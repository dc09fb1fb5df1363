-- agent.lua - the API a script uses inside `moonrover agent`: event streams
-- delivered in batches, timers, logging, metrics, and state handed over across
-- hot reloads. Each script runs in its own Lua state; this module links that
-- state to the agent through the handle in package.loaded["moonrover.script_context"].
-- The functions whose names start with "_" are the agent's entry points.
local clock = require("moonrover.lib.clock")
local config = require("moonrover.config")
local list_batch = require("moonrover.net.list_batch")
local rt = require("moonrover.rt")
local serialize = require("moonrover.lib.serialize")
local text_escape = require("moonrover.lib.text_escape")

local ffi, lib = rt.ffi, rt.lib
local context = require("moonrover.script_context")
local script = ffi.cast("mr_script *", context.script)
local metric_add = rt.lock_free("mr_script_metric_add")
local metric_set = rt.lock_free("mr_script_metric_set")
local metric_observe = rt.lock_free("mr_script_metric_observe")
local getinfo = debug.getinfo
local THIS = getinfo(1, "S").source

local _M = {
  name = context.name,
  canary = context.canary,
  EXEC = lib.MR_PROCESS_EXEC,
  EXIT = lib.MR_PROCESS_EXIT,
  FORK = lib.MR_PROCESS_FORK,
}

local STREAMS = {
  process = { id = lib.MR_STREAM_PROCESS, ctype = ffi.typeof("struct mr_process_event *") },
}
-- The benchmarks' stream (runtime/api_test.h), for the scripts of the agent
-- scripts/bench/agent_events.lua runs: they declare the test API first.
if rt.has_test_api() then
  STREAMS.bench = { id = lib.MR_STREAM_BENCH, ctype = ffi.typeof("struct mr_bench_event *") }
end
local BY_ID = {}
for name, s in pairs(STREAMS) do
  s.name = name
  BY_ID[s.id] = s
end
-- The network streams (plain tables made by net/script_tracer.lua): which
-- ones, and this script's tracer once it subscribed to one.
local NETWORK_STREAMS = {}
local network_names = require("moonrover.net.script_tracer").streams()
for _, name in ipairs(network_names) do
  NETWORK_STREAMS[name] = true
end
local STREAM_NAMES = "process, " .. (STREAMS.bench and "bench, " or "") .. table.concat(network_names, ", ")
local NET_TICK_S = 0.1
local network
local start_network

-- Raises msg at the script's line that called this module: the first frame
-- that is neither this module's nor a C function's, however the call got
-- here (tail calls included).
local function raise(msg)
  local level = 2
  local info = getinfo(level, "S")
  while info and (info.source == THIS or info.what == "C" or info.what == "tail") do
    level = level + 1
    info = getinfo(level, "S")
  end
  error(msg, info and level or 0)
end

local function check_number(v, what)
  if type(v) ~= "number" then
    raise(what .. " must be a number, not " .. (v == nil and "nil" or type(v)))
  end
end

local handlers = {} -- stream id -> list of functions
local stoppers = {}
local reclaimer
local timers = {}   -- timer id -> { fn, repeating }
local next_timer = 0
local exporter

-- A batch: batch.n events in batch.events[0 .. n-1] (typed FFI structs,
-- valid only during the callback), or iterate with `for ev in batch:each()`.
local Batch = {}
Batch.__index = Batch

function Batch:each()
  local i, n, events = -1, self.n, self.events
  return function()
    i = i + 1
    if i < n then
      return events[i]
    end
  end
end

local function subscribe(id)
  local ok, err = rt.call(lib.mr_script_subscribe, script, id)
  if not ok then
    raise(err)
  end
end

-- Subscribes fn(batch) to a stream ("process", "connection", "http").
function _M.on(stream, fn)
  local s = STREAMS[stream]
  if not s and not NETWORK_STREAMS[stream] then
    raise("unknown stream '" .. tostring(stream) .. "' (streams: " .. STREAM_NAMES .. ")")
  end
  if type(fn) ~= "function" then
    raise("on(stream, fn): fn must be a function")
  end
  local key = s and s.id or stream
  if not handlers[key] then
    if s then
      subscribe(s.id)
    else
      start_network()
    end
    handlers[key] = {}
  end
  local list = handlers[key]
  list[#list + 1] = fn
end

local function add_timer(name, seconds, fn, repeating)
  if type(seconds) ~= "number" or seconds < 0.001 or seconds ~= seconds then
    raise(name .. "(seconds, fn): seconds must be a number, at least 0.001, not " .. tostring(seconds))
  end
  if type(fn) ~= "function" then
    raise(name .. "(seconds, fn): fn must be a function, not " .. (fn == nil and "nil" or type(fn)))
  end
  next_timer = next_timer + 1
  local id = next_timer
  local ok, err = rt.call(lib.mr_script_timer, script, id, seconds, repeating and 1 or 0)
  if not ok then
    raise(name .. "(seconds, fn): " .. err)
  end
  timers[id] = { fn = fn, repeating = repeating }
  return {
    cancel = function()
      if timers[id] then
        timers[id] = nil
        lib.mr_script_timer_cancel(script, id)
      end
    end,
  }
end

-- Calls fn() every `seconds`; returns a handle with :cancel().
function _M.every(seconds, fn)
  return add_timer("every", seconds, fn, true)
end

-- Calls fn() once after `seconds`; returns a handle with :cancel().
function _M.after(seconds, fn)
  return add_timer("after", seconds, fn, false)
end

local LEVELS = { debug = 0, info = 1, warn = 2, error = 3 }

-- log.info(fmt, ...) and friends: string.format, then one log line, its
-- control and non-UTF-8 bytes escaped (scripts log what came off the wire).
_M.log = {}
for name, level in pairs(LEVELS) do
  _M.log[name] = function(fmt, ...)
    local msg = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
    lib.mr_script_log(script, level, text_escape.printable(msg))
  end
end

local function labels_text(labels)
  if labels == nil then
    return ""
  end
  local keys = {}
  for k in pairs(labels) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do
    local v = tostring(labels[k]):gsub("\\", "\\\\"):gsub("\"", "\\\""):gsub("\n", "\\n")
    parts[i] = string.format("%s=\"%s\"", k, v)
  end
  return table.concat(parts, ",")
end

local function metric(kind, name, help, labels)
  local series, err = rt.call(lib.mr_script_metric, script, kind, name, help or "",
    labels_text(labels))
  if not series then
    raise(err)
  end
  return series
end

-- counter(name, help, labels): :inc(), :add(v) with v >= 0 (counters only
-- go up). Series survive reloads.
function _M.counter(name, help, labels)
  local id = metric(lib.MR_COUNTER, name, help, labels)
  return {
    inc = function() metric_add(script, id, 1) end,
    add = function(_, v)
      if type(v) ~= "number" or v < 0 or v ~= v then
        raise("counter:add(v): v must be a number >= 0 (counters only go up), not " .. tostring(v))
      end
      metric_add(script, id, v)
    end,
  }
end

-- gauge(name, help, labels): :set(v), :add(v).
function _M.gauge(name, help, labels)
  local id = metric(lib.MR_GAUGE, name, help, labels)
  return {
    set = function(_, v)
      check_number(v, "gauge:set(v): v")
      metric_set(script, id, v)
    end,
    add = function(_, v)
      check_number(v, "gauge:add(v): v")
      metric_add(script, id, v)
    end,
  }
end

local HISTOGRAM_USAGE = "histogram(name, help, labels, buckets): "

-- The bucket bounds a script gave, as a C array and its length (nil, 0 for
-- none: the default ones). The registry checks the numbers themselves.
local function bounds_array(buckets)
  if buckets == nil then
    return nil, 0
  end
  if type(buckets) ~= "table" then
    raise(HISTOGRAM_USAGE .. "buckets must be a list of numbers, not " .. type(buckets))
  end
  local n = #buckets
  for k in pairs(buckets) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
      local key = type(k) == "string" and string.format("%q", k) or tostring(k)
      raise(HISTOGRAM_USAGE .. "buckets must be a list of numbers, not a table with the key " .. key)
    end
  end
  if n == 0 then
    raise(HISTOGRAM_USAGE .. "buckets must hold at least one bound")
  end
  for i = 1, n do
    if type(buckets[i]) ~= "number" then
      raise(HISTOGRAM_USAGE .. "bucket " .. i .. " must be a number, not " .. type(buckets[i]))
    end
  end
  return ffi.new("double[?]", n, buckets), n
end

-- histogram(name, help, labels, buckets): :observe(seconds). buckets: the
-- metric's bucket upper bounds, ascending (default 0.0001 to 5 s).
function _M.histogram(name, help, labels, buckets)
  local bounds, n = bounds_array(buckets)
  local id, err = rt.call(lib.mr_script_histogram, script, name, help or "", labels_text(labels), bounds, n)
  if not id then
    raise(err)
  end
  return {
    observe = function(_, v)
      check_number(v, "histogram:observe(v): v")
      metric_observe(script, id, v)
    end,
  }
end

local loaded_config

-- The agent's configuration (the --config file over the defaults, see
-- docs/configuration.md), read with moonrover.config's accessors.
function _M.config()
  if not loaded_config then
    local cfg, err
    if context.config_text then
      cfg, err = config.load_text(context.config_text, context.config_name)
    else
      cfg = config.defaults()
    end
    if not cfg then
      raise(err)
    end
    loaded_config = cfg
  end
  return loaded_config
end

-- set_budget(ms): this script's calls may run up to ms milliseconds (10 to
-- 60000) instead of the agent's --budget-ms, for bounded but heavy work. A
-- larger budget also covers the call in progress (the load, at top level).
function _M.set_budget(ms)
  check_number(ms, "set_budget(ms): ms")
  local ok, err = rt.call(lib.mr_script_set_budget, script, ms)
  if not ok then
    raise("set_budget(ms): " .. err)
  end
end

-- set_memory_budget(mib): this script's Lua state may hold up to mib MiB (1
-- to 65536) instead of the agent's --script-memory; at once.
function _M.set_memory_budget(mib)
  check_number(mib, "set_memory_budget(mib): mib")
  local ok, err = rt.call(lib.mr_script_set_memory_budget, script, mib)
  if not ok then
    raise("set_memory_budget(mib): " .. err)
  end
end

-- Seconds on a monotonic clock (the clock of the events' ts_ns).
_M.now = clock.monotonic_s

-- export(fn, refused): fn() returns the data (plain tables, strings,
-- numbers, booleans) to hand to this script's next version at a hot reload.
-- When the reload is then refused, refused(data) (optional) gets it back,
-- and this version goes on running.
function _M.export(fn, refused)
  if type(fn) ~= "function" or (refused ~= nil and type(refused) ~= "function") then
    raise("export(fn, refused): fn (and refused, when given) must be functions")
  end
  exporter = fn
  reclaimer = refused
end

local handed

-- What the previous version handed over: { user = what its export gave,
-- net = its network tracer's state }, decoded once.
local function handed_over()
  if handed == nil then
    handed = {}
    if context.imported then
      local value, err = serialize.decode(context.imported)
      if err then
        raise("the previous version's state cannot be read: " .. err)
      end
      handed = value or {}
    end
  end
  return handed
end

-- The data the previous version exported, or nil (first start, or none).
function _M.imported()
  return handed_over().user
end

-- on_stop(fn): fn() runs when the agent is asked to stop (SIGTERM, SIGINT),
-- before it exits; the agent then keeps its loop (timers, calls in flight)
-- running for a short grace period so last work can finish.
function _M.on_stop(fn)
  if type(fn) ~= "function" then
    raise("on_stop(fn): fn must be a function")
  end
  stoppers[#stoppers + 1] = fn
end

-- Runs the on_stop hooks; returns how many there were.
function _M._stop()
  for _, fn in ipairs(stoppers) do
    fn()
  end
  return #stoppers
end

function _M._dispatch(stream, addr, n)
  local s = BY_ID[stream]
  if not s then
    return network:feed(stream, addr, n)
  end
  local batch = setmetatable({ n = n, events = ffi.cast(s.ctype, addr), stream = s.name }, Batch)
  local list = handlers[stream]
  for i = 1, #list do
    list[i](batch)
  end
end

local function deliver_network(stream, events)
  list_batch.deliver(handlers[stream], stream, events)
end

-- Starts this script's network tracer, with the state its previous version
-- handed over: connections, and the parsers' bytes in flight.
start_network = function()
  if network then
    return
  end
  subscribe(lib.MR_STREAM_TCP)
  subscribe(lib.MR_STREAM_NET)
  network = require("moonrover.net.script_tracer").new({
    set_verdict = function(conn, verdict)
      local ok, err = rt.call(lib.mr_script_net_verdict, script, conn, verdict)
      if not ok then
        _M.log.debug("%s", err)
      end
    end,
    set_capture = function(conn, direction, skip_to)
      local ok, err = rt.call(lib.mr_script_net_capture, script, conn, direction, skip_to)
      if not ok then
        _M.log.debug("%s", err)
      end
    end,
    conn_open = function(conn)
      return lib.mr_script_net_conn_open(script, conn) ~= 0 -- unknown (an error): kept
    end,
    memory_limit = tonumber(lib.mr_script_memory_budget(script)),
    registry = _M,
    script = _M.name,
    state = handed_over().net,
  }, deliver_network)
  add_timer("every", NET_TICK_S, function()
    network:tick(clock.monotonic_ns())
  end, true)
end

function _M._timer(id)
  local t = timers[id]
  if not t then
    return
  end
  if not t.repeating then
    timers[id] = nil
    lib.mr_script_timer_cancel(script, id)
  end
  t.fn()
end

function _M._reclaim(text)
  if reclaimer then
    reclaimer(assert(serialize.decode(text)).user)
  end
end

function _M._export()
  if not exporter and not network then
    return nil
  end
  return serialize.encode({ user = exporter and exporter() or nil, net = network and network:state() or nil })
end

return _M
