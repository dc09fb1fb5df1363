-- script_tracer.lua - the network tracer inside one agent script: it reads
-- the agent's network streams (connection events, and the variable-size
-- records of the bytes moved), runs them through net/tracer.lua, and hands
-- what comes out to the script as batches of plain tables: connection events
-- on the "connection" stream, exchanges on their protocol's stream ("http"),
-- reused after the script's handlers returned when it said so
-- (exchange.reuse()).
-- Each script that subscribes has its own (scripts share no Lua state); the
-- kernel's verdicts are the same in every one, since every tracer classifies
-- a connection from the same bytes.
local rt = require("moonrover.rt")
local container_id = require("moonrover.net.coroot_container")
local exchange = require("moonrover.net.exchange")
local monotonic_ns = require("moonrover.lib.clock").monotonic_ns
local protocol_list = require("moonrover.net.protocol_list")
local tracer = require("moonrover.net.tracer")

local ffi, lib = rt.ffi, rt.lib
local new_table = require("table.new")
local release = exchange.release

local _M = {}
local mt = { __index = _M }


-- The streams a script may subscribe to: connection events, then one per
-- protocol parsed.
function _M.streams()
  local names = protocol_list.names()
  table.insert(names, 1, "connection")
  return names
end

-- The tracer's counts published as the script's metrics, every second:
-- stats() field, metric, help, kind.
local PUBLISHED = {
  { "exchanges", "moonrover_net_exchanges_total", "Exchanges the network tracer completed", "counter" },
  { "gaps", "moonrover_net_gaps_total", "Bytes lost to a parser (a record lost in the kernel): it resynchronised",
    "counter" },
  { "unclassified", "moonrover_net_unclassified_connections_total",
    "Connections whose first bytes no protocol recognised: only their bytes are counted", "counter" },
  { "held_too_long", "moonrover_net_exchanges_without_addresses_total",
    "Exchanges handed on before their connection's addresses were known", "counter" },
  { "evicted", "moonrover_net_connections_evicted_total",
    "Connections the tracer forgot, the least recently used, to stay under its limit", "counter" },
  { "expired", "moonrover_net_connections_expired_total",
    "Connections the tracer forgot: idle and no longer followed by the kernel, or idle past the limit", "counter" },
  { "shed", "moonrover_net_connections_shed_total",
    "Connections not parsed, only counted, because the script's memory was near its budget", "counter" },
  { "connections", "moonrover_net_connections", "Connections the tracer follows", "gauge" },
}
local PUBLISH_NS = 1e9

-- The memory budget of a script that does not say its own (the agent's
-- --script-memory default).
local DEFAULT_MEMORY_LIMIT = 128 * 1048576

-- opts: set_verdict(conn, verdict), set_capture(conn, direction, skip_to),
-- conn_open(conn) (see net/tracer.lua); memory_limit (bytes: the script's
-- memory budget, 128 MiB when not given); registry (the agent's metrics API: the
-- tracer's counts, labelled script = opts.script, and the container-id
-- resolver's); state (what state() returned in the script's previous
-- version). deliver(stream_name, list) gets each batch.
function _M.new(opts, deliver)
  local state = opts.state or {}
  local self = setmetatable({
    deliver = deliver, names = _M.streams(), out = {}, published = state.published or {}, next_publish = 0,
    most_released = 0,
  }, mt)
  self.queued = {}
  for _, name in ipairs(self.names) do
    self.out[name], self.queued[name] = {}, 0
  end
  self.series = {}
  for i, p in ipairs(PUBLISHED) do
    self.series[i] = opts.registry[p[4]](p[2], p[3], { script = opts.script })
  end
  local resolver = container_id.new({ registry = opts.registry })
  self.tracer = tracer.new({
    protocols = protocol_list.modules(),
    set_verdict = opts.set_verdict,
    set_capture = opts.set_capture,
    conn_open = opts.conn_open,
    memory_limit = opts.memory_limit or DEFAULT_MEMORY_LIMIT,
    container_id = function(pid)
      return (resolver:lookup(pid, monotonic_ns()))
    end,
    on_exchange = function(ex)
      self:queue(ex.protocol, ex)
    end,
    on_conn_event = function(ev)
      self:queue("connection", ev)
    end,
  }, state.tracer)
  return self
end

-- Batches by stream name: a list for each of the streams, always there,
-- so that queueing takes no branch (a branch taken once per batch inside the
-- compiled per-record loop makes LuaJIT try side traces it cannot compile).
-- Each list's length is kept beside it: `#list` is a call into LuaJIT's
-- runtime (a binary search in a list's free tail) for every item.
function _M:queue(stream, item)
  local n = self.queued[stream] + 1
  self.queued[stream] = n
  self.out[stream][n] = item
end

-- Hands what the tracer completed to the script, one batch per stream that
-- has items, in the order of _M.streams(): connection events first, so that
-- a connection's opening comes before its exchanges. (A walk of the names,
-- not pairs(), which LuaJIT 2.1 does not compile.)
-- When the script reuses exchanges (exchange.reuse()), a list is emptied
-- after its handlers returned and its exchanges go back to the pool; else
-- the list is the script's, and the next one is made the size of the last
-- batch (the next is likely alike): a list grown from empty is reallocated
-- a dozen times.
-- The pool is trimmed every second to the most exchanges one flush gave back
-- in that second (what a batch needs: none while no exchange comes).
function _M:flush()
  local out, queued, names = self.out, self.queued, self.names
  local reused = exchange.reused()
  for k = 1, #names do
    local name = names[k]
    local n = queued[name]
    if n > 0 then
      local list = out[name]
      queued[name] = 0
      if reused then
        self.deliver(name, list)
        local pooled = name ~= "connection"
        for i = 1, n do
          if pooled then
            release(list[i])
          end
          list[i] = nil
        end
        if pooled and n > self.most_released then
          self.most_released = n
        end
      else
        out[name] = new_table(n, 0)
        self.deliver(name, list)
      end
    end
  end
end

-- A batch of the agent's stream (MR_STREAM_TCP: n struct mr_tcp_event at
-- addr; MR_STREAM_NET: n records, each after its 8-byte size prefix).
function _M:feed(stream, addr, n)
  local t = self.tracer
  if stream == lib.MR_STREAM_TCP then
    local events = ffi.cast("struct mr_tcp_event *", addr)
    for i = 0, n - 1 do
      t:on_tcp_event(events[i])
    end
  else
    t:on_data_run(ffi.cast("uint8_t *", addr), n)
  end
  self:flush()
end

-- Brings the tracer's metrics up to date (counters grow by what the counts
-- grew since the last time, in this version or the one before).
function _M:publish()
  local stats, done = self.tracer:stats(), self.published
  for i, p in ipairs(PUBLISHED) do
    local v = stats[p[1]] or 0
    if p[4] == "gauge" then
      self.series[i]:set(v)
    elseif v > (done[p[1]] or 0) then
      self.series[i]:add(v - (done[p[1]] or 0))
    end
    done[p[1]] = v
  end
end

-- Time passes: exchanges ended by silence, closes, progress events.
function _M:tick(now_ns)
  self.tracer:tick(now_ns)
  self:flush()
  if now_ns >= self.next_publish then
    self.next_publish = now_ns + PUBLISH_NS
    self:publish()
    exchange.trim(self.most_released)
    self.most_released = 0
  end
end

function _M:state()
  self:publish()
  return { tracer = self.tracer:state(), published = self.published }
end

function _M:stats()
  return self.tracer:stats()
end

return _M
