-- net_replay.lua - the agent's Lua cost per HTTP exchange under wrk and
-- nginx, without the kernel: records like those of `wrk -t1 -c16` against
-- nginx's `return 200`, both sides traced as `moonrover agent` traces them
-- (16 keep-alive connections; per request wrk's write, nginx's read,
-- nginx's write, wrk's read: two exchanges, four data records), built in
-- memory in the net stream's layout and fed through the real script tracer
-- (net/script_tracer.lua, net/tracer.lua, the HTTP parser), the
-- agent's batch hand-off (net/list_batch.lua, as agent.lua uses it) and the
-- real bundled lua/scripts/network.lua with coroot's metrics. The metrics
-- registry is a cheap recording one (Lua numbers, not the agent's C series:
-- those need an agent's script), so the registry's own cost is left out.
-- Reports ns of CPU (os.clock) per exchange, the median of the rounds (the
-- garbage collector's work included), LuaJIT's VM states sampled during
-- the rounds (jit.profile: the collector's share) and the bytes allocated
-- per exchange. UNMEASURED=1: see below. STATES=0 leaves the VM states out
-- (to run it under LuaJIT's own profiler, luajit -jp=..., which the
-- sampling would stop). scripts/bench/net_replay.sh compares two versions.
--   usage (from the repo root, after scripts/build.sh):
--   MOONROVER_LIB=build/libmoonrover.so luajit scripts/bench/net_replay.lua [REQUESTS] [ROUNDS] [BATCH]
-- REQUESTS per round (200000), ROUNDS (7), BATCH records per batch (1024,
-- as the agent's net queue hands them).
-- The bundled Lua, then the build's generated modules (moonrover.consts).
package.path = "lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") .. "/?.lua;" ..
  package.path
local list_batch = require("moonrover.net.list_batch")
local rt = require("moonrover.rt")
local ffi = rt.ffi

local REQUESTS = tonumber(arg[1]) or 200000
local ROUNDS = tonumber(arg[2]) or 7
local BATCH = tonumber(arg[3]) or 1024
local CONNS = 16
local REQUEST_NS = 6000 -- about 166k requests/s
local TICK_NS = 100e6   -- the agent's network tick (agent.lua's NET_TICK_S)

local REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
local RESPONSE = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 02 Dec 2026 01:00:00 GMT\r\n"
  .. "Content-Type: application/octet-stream\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"

local INGRESS, EGRESS = rt.lib.MR_NET_INGRESS, rt.lib.MR_NET_EGRESS
local CLIENT, SERVER = rt.lib.MR_ROLE_CLIENT, rt.lib.MR_ROLE_SERVER
local SERVER_PORT = 8080

-- ------------------------------------------------------------- the agent

-- The agent's script API as network.lua uses it, with a recording registry.
local handlers = {}
local by_name = {} -- metric name -> its last series made
local function series(name)
  local s = { value = 0 }
  by_name[name] = s
  s.inc = function() s.value = s.value + 1 end
  s.add = function(_, v)
    assert(type(v) == "number" and v >= 0)
    s.value = s.value + v
  end
  s.set = function(_, v) s.value = v end
  s.observe = function(_, v)
    s.value = s.value + v
  end
  return s
end
local fake_agent = {
  name = "network", counter = series, gauge = series, histogram = series,
  imported = function() return nil end, export = function() end, every = function() end,
  now = function() return 0 end,
  config = function() return require("moonrover.config").defaults() end,
  log = { info = function() end, warn = function() end, error = function() end },
  on = function(stream, fn)
    handlers[stream] = handlers[stream] or {}
    table.insert(handlers[stream], fn)
  end,
}
package.loaded["moonrover.agent"] = fake_agent
dofile("lua/scripts/network.lua")

-- The agent's batch hand-off (net/list_batch.lua), counting what it delivers.
local delivered = { http = 0, connection = 0 }
local function deliver_network(stream, events)
  delivered[stream] = delivered[stream] + #events
  list_batch.deliver(handlers[stream], stream, events)
end

local network = require("moonrover.net.script_tracer").new({
  registry = fake_agent, script = "network", set_verdict = function() end,
}, deliver_network)
-- Both sides in the host's container ("/"), measured, whatever this
-- process's cgroup is; UNMEASURED=1: in a cgroup that coroot's metrics
-- leave out (false), as processes started where http_overhead.sh runs may
-- be, so that their exchanges skip the metrics. The container is looked up
-- once per connection.
local UNMEASURED = os.getenv("UNMEASURED") == "1"
network.tracer.opts.container_id = function()
  return not UNMEASURED and "/"
end

-- ------------------------------------------------------------- the records

local WRK_PID, NGINX_PID = 4001, 4002

local function tcp_event(kind, conn, role, local_port, remote_port, ts)
  local e = ffi.new("struct mr_tcp_event")
  e.ts_ns, e.conn, e.kind, e.role, e.family = ts, conn, kind, role, 2
  e.pid = role == CLIENT and WRK_PID or NGINX_PID
  e.local_port, e.remote_port = local_port, remote_port
  e.local_addr[0], e.local_addr[3] = 127, 1
  e.remote_addr[0], e.remote_addr[3] = 127, 1
  ffi.copy(e.comm, role == CLIENT and "wrk" or "nginx")
  return e
end

-- The connections: wrk's client side (cookie 1000 + k) and nginx's server side (2000 + k).
local function open_connections()
  local events = ffi.new("struct mr_tcp_event[?]", 2 * CONNS)
  for k = 0, CONNS - 1 do
    events[2 * k] = tcp_event(rt.lib.MR_TCP_CONNECT, 1000 + k, CLIENT, 40000 + k, SERVER_PORT, 1)
    events[2 * k + 1] = tcp_event(rt.lib.MR_TCP_ACCEPT, 2000 + k, SERVER, SERVER_PORT, 40000 + k, 1)
  end
  network:feed(rt.lib.MR_STREAM_TCP, events, 2 * CONNS)
end

local header_bytes = ffi.sizeof("struct mr_net_data")
local record_ptr = ffi.typeof("struct mr_net_data *")

-- Record r of a request: wrk writes, nginx reads, nginx writes, wrk reads.
local SHAPES = {
  { conn = 1000, direction = EGRESS, role = CLIENT, payload = REQUEST },
  { conn = 2000, direction = INGRESS, role = SERVER, payload = REQUEST },
  { conn = 2000, direction = EGRESS, role = SERVER, payload = RESPONSE },
  { conn = 1000, direction = INGRESS, role = CLIENT, payload = RESPONSE },
}
for _, s in ipairs(SHAPES) do
  s.size = header_bytes + #s.payload
  s.room = 8 + bit.band(s.size + 7, -8)
end

-- One batch's buffer: BATCH records, the four of a request in turn, requests
-- going round the connections; the records' headers are rewritten for each
-- batch (times, offsets) outside the time measured.
local batch_bytes, slots = 0, {}
for i = 0, BATCH - 1 do
  local s = SHAPES[i % 4 + 1]
  slots[i + 1] = { at = batch_bytes, shape = s }
  batch_bytes = batch_bytes + s.room
end
local buffer = ffi.new("uint8_t[?]", batch_bytes)
for _, slot in ipairs(slots) do
  local s = slot.shape
  ffi.cast("uint32_t *", buffer + slot.at)[0] = s.size
  local r = ffi.cast(record_ptr, buffer + slot.at + 8)
  r.direction, r.role, r.len, r.copied = s.direction, s.role, #s.payload, #s.payload
  r.pid = s.role == CLIENT and WRK_PID or NGINX_PID
  ffi.copy(buffer + slot.at + 8 + header_bytes, s.payload, #s.payload)
end

local offsets = {} -- conn * 2 + direction -> bytes moved so far
local request_no, now = 0, 1000

local function fill_batch()
  for i = 1, BATCH do
    local slot = slots[i]
    local s = slot.shape
    if (i - 1) % 4 == 0 then
      request_no = request_no + 1
      now = now + REQUEST_NS
    end
    local conn = s.conn + request_no % CONNS
    local key = conn * 2 + s.direction
    local r = ffi.cast(record_ptr, buffer + slot.at + 8)
    r.conn, r.ts_ns = conn, now + (i - 1) % 4 * 1000
    r.offset = offsets[key] or 0
    offsets[key] = (offsets[key] or 0) + #s.payload
  end
end

-- ------------------------------------------------------------- measuring

-- Feeds `requests` requests; returns the CPU seconds of the tracer and the
-- script (the collector's work included: it runs at its own pace, as in
-- the agent) and the exchanges made.
local function round(requests)
  local batches = math.ceil(requests * 4 / BATCH)
  local cpu, next_tick = 0, now + TICK_NS
  for _ = 1, batches do
    fill_batch()
    local t0 = os.clock()
    network:feed(rt.lib.MR_STREAM_NET, buffer, BATCH)
    if now >= next_tick then
      network:tick(now)
      next_tick = now + TICK_NS
    end
    cpu = cpu + os.clock() - t0
  end
  return cpu, batches * BATCH / 2
end

-- Bytes allocated per exchange: a short round with the collector stopped
-- (a long one would time page faults of the growing heap).
local function allocated_per_exchange()
  collectgarbage("collect")
  collectgarbage("stop")
  local kb0 = collectgarbage("count")
  local _, exchanges = round(4 * BATCH)
  local bytes = (collectgarbage("count") - kb0) * 1024
  collectgarbage("restart")
  return bytes / exchanges
end

-- LuaJIT's VM states sampled every millisecond while fn runs (jit.profile):
-- the share of samples compiled (N), interpreted (I), in C (C), in the
-- collector (G), compiling (J).
local function vm_states(fn)
  if os.getenv("STATES") == "0" then
    fn()
    return "not sampled"
  end
  local profile = require("jit.profile")
  local count, total = {}, 0
  profile.start("i1", function(_, samples, vmstate)
    count[vmstate] = (count[vmstate] or 0) + samples
    total = total + samples
  end)
  fn()
  profile.stop()
  local parts = {}
  for _, state in ipairs({ "N", "I", "C", "G", "J" }) do
    parts[#parts + 1] = string.format("%s %.0f%%", state, 100 * (count[state] or 0) / math.max(total, 1))
  end
  return table.concat(parts, ", ")
end

open_connections()
round(20000) -- warm-up: traces compiled
local per = {}
local states = vm_states(function()
  for k = 1, ROUNDS do
    local h0 = delivered.http
    local counted = by_name.container_http_inbound_requests_total
    local s0, a0 = counted and counted.value, counted and by_name.container_http_requests_total.value
    local cpu, exchanges = round(REQUESTS)
    assert(delivered.http - h0 == exchanges, "exchanges: " .. delivered.http - h0 .. " of " .. exchanges)
    local served, asked = by_name.container_http_inbound_requests_total, by_name.container_http_requests_total
    assert(UNMEASURED or served.value - s0 == exchanges / 2 and asked.value - a0 == exchanges / 2,
      "requests not counted")
    per[k] = cpu * 1e9 / exchanges
  end
end)
local function median(t)
  local s = { unpack(t) }
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end
local parts = {}
for k = 1, ROUNDS do
  parts[k] = string.format("%.0f", per[k])
end
print(string.format("ns per exchange (%d rounds of %d requests, %d records a batch): %s", ROUNDS, REQUESTS,
  BATCH, table.concat(parts, " ")))
print(string.format("VM states: %s; allocated %.0f bytes per exchange", states, allocated_per_exchange()))
print(string.format("median %.0f ns per exchange, %.0f per request", median(per), 2 * median(per)))
