-- coroot_metrics.lua - turns the network tracer's connection events and L7
-- exchanges into the Prometheus series coroot-node-agent exports, with the
-- same names and labels, so that coroot and the dashboards and alerts written
-- for it work on moonrover's. Pure: the registry (the agent's metrics API:
-- counter / gauge / histogram) and the time (the events' ts, tick's now_ns)
-- are given; the specs pass a recording registry.
--
-- Every series carries `container_id` (net/coroot_container.lua names it)
-- and, as coroot's do, `app_id` where coroot gives one: for the
-- /k8s/<namespace>/<pod>/<container> ids of pods named as a Deployment's,
-- DaemonSet's or StatefulSet's (coroot_container.app_id); elsewhere coroot's
-- app_id is "", and an empty label is no label to Prometheus, so it is left
-- out. Connection series are for outbound connections (role "client"):
-- destination is the remote "ip:port" ("[ipv6]:port") as the tracer writes
-- it (coroot writes a name learnt from DNS answers when it has one; moonrover
-- does not parse DNS yet), and actual_destination the same address (coroot
-- finds the address behind a DNAT in conntrack; moonrover has no conntrack
-- lookup). Connections coroot leaves out are left out here too (see
-- net/destination_filter.lua), and their exchanges with them.
--
-- Byte counters come from the totals that "progress" and "close" events
-- carry: each connection's last totals are kept and only what they grew by is
-- added, so a close after progress events adds only the rest, and a
-- connection seen again after it was dropped for silence resumes from the
-- totals it had. A connection first seen in a progress or close event (the
-- tracer met it mid-stream, or its connect was lost) counts from zero.
--
-- The number of series this module creates is capped (max_series, a
-- histogram counting as its buckets plus 3); updates of series past the cap
-- are counted in moonrover_net_metrics_series_dropped_total and not made.
-- Events that cannot be attributed, and those of processes that are not
-- measured (container id false), are counted in
-- moonrover_net_metrics_events_ignored_total{reason}.
local coroot_container = require("moonrover.net.coroot_container")
local destination_filter = require("moonrover.net.destination_filter")

local _M = {}

-- Prometheus' default histogram buckets, which coroot's histograms use.
_M.BUCKETS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }

local DST = { { "destination", 1 }, { "actual_destination", 1 } }

-- Each metric: kind, name, help, and its labels besides container_id, as
-- { label, index of the value given to series() } (no index: "").
local METRICS = {
  connects = { "counter", "container_net_tcp_successful_connects_total",
    "Outbound TCP connections established, by destination", DST },
  connect_time = { "counter", "container_net_tcp_connection_time_seconds_total",
    "Time outbound TCP connections took to establish (SYN sent to established), by destination", DST },
  failed = { "counter", "container_net_tcp_failed_connects_total",
    "Outbound TCP connections that failed to establish, by destination", { { "destination", 1 } } },
  active = { "gauge", "container_net_tcp_active_connections", "Outbound TCP connections open, by destination", DST },
  sent = { "counter", "container_net_tcp_bytes_sent_total", "Bytes sent on outbound TCP connections, by destination",
    DST },
  received = { "counter", "container_net_tcp_bytes_received_total",
    "Bytes received on outbound TCP connections, by destination", DST },
  retransmits = { "counter", "container_net_tcp_retransmits_total",
    "TCP segments retransmitted on outbound connections, by destination", DST },
  listen = { "gauge", "container_net_tcp_listen_info", "TCP listening sockets: 1 while open, 0 once closed",
    { { "listen_addr", 1 }, { "proxy" } } },
  http_requests = { "counter", "container_http_requests_total",
    "Outbound HTTP requests, by destination and status class", { DST[1], DST[2], { "status", 2 } } },
  http_duration = { "histogram", "container_http_requests_duration_seconds_total",
    "Response time of outbound HTTP requests (request sent to first response byte), by destination", DST },
  http_inbound = { "counter", "container_http_inbound_requests_total", "Inbound HTTP requests, by status class",
    { { "status", 1 } } },
  http_inbound_duration = { "histogram", "container_http_inbound_requests_duration_seconds_total",
    "Response time of inbound HTTP requests (request received to first response byte)", {} },
}

-- The status label of an HTTP status: "2xx" and so on, "unknown" outside
-- 100-599. Whole statuses are looked up (a string made per exchange cost
-- more than the rest of the exchange's metrics).
local STATUS_CLASSES = {}
for status = 100, 599 do
  STATUS_CLASSES[status] = math.floor(status / 100) .. "xx"
end

local function http_status(status)
  local class = STATUS_CLASSES[status]
  if class then
    return class
  end
  if type(status) == "number" and status >= 100 and status < 600 then
    return math.floor(status / 100) .. "xx"
  end
  return "unknown"
end

-- The protocols measured: metrics per role and the status label of an exchange.
local PROTOCOLS = {
  http = { client = "http_requests", client_duration = "http_duration", server = "http_inbound",
    server_duration = "http_inbound_duration", status = http_status },
}

local Metrics = {}
Metrics.__index = Metrics

-- Counts an event not measured for reason.
function Metrics:ignore(reason)
  local c = self.ignored[reason]
  if not c then
    c = self.registry.counter("moonrover_net_metrics_events_ignored_total",
      "Connection events and exchanges the coroot metrics could not use, by reason", { reason = reason })
    self.ignored[reason] = c
  end
  c:inc()
end

-- The table at t[k], made on first use.
local function level(t, k)
  local sub = t[k]
  if not sub then
    sub = {}
    t[k] = sub
  end
  return sub
end

-- Creates the series of Metrics:series; nil past the cap or when the
-- registry refuses it. Only here is the series' key string made: the lookup
-- of a known series (per event) goes through nested tables, no string built.
function Metrics:new_series(which, cid, a, b)
  local def = METRICS[which]
  local key = def[2] .. "\0" .. cid .. "\0" .. (a or "") .. "\0" .. (b or "")
  local cost = def[1] == "histogram" and #self.buckets + 3 or 1
  if not self.known[key] and self.n_series + cost > self.max_series then
    self.dropped:inc()
    return nil
  end
  local labels, values = { container_id = cid, app_id = coroot_container.app_id(cid) }, { a, b }
  for _, l in ipairs(def[4]) do
    labels[l[1]] = l[2] and values[l[2]] or ""
  end
  local ok, handle = pcall(self.registry[def[1]], def[2], def[3], labels,
    def[1] == "histogram" and self.buckets or nil)
  if not ok then
    self:ignore("bad_label")
    return nil
  end
  if not self.known[key] then
    self.known[key] = cost
    self.n_series = self.n_series + cost
  end
  level(level(level(self.handles, which), cid), a or "")[b or ""] = handle
  return handle
end

-- The handle of a series of metric `which` for container cid, with the label
-- values a, b; nil when it cannot be created (past the cap, or refused by the
-- registry). Lookups make no tables, so refused series cost no memory.
function Metrics:series(which, cid, a, b)
  local t = self.handles[which]
  t = t and t[cid]
  t = t and t[a or ""]
  local handle = t and t[b or ""]
  return handle or self:new_series(which, cid, a, b)
end

function Metrics:add(which, v, cid, a, b)
  local h = self:series(which, cid, a, b)
  if h then
    h:add(v)
  end
end

function Metrics:active_add(cid, dst, delta)
  local k = cid .. "\0" .. dst
  local n = (self.active[k] or 0) + delta
  self.active[k] = n > 0 and n or nil
  local h = self:series("active", cid, dst)
  if h then
    h:set(n)
  end
end

-- The key of the connection of ev: the tracer's id, else its addresses.
local function conn_key(ev)
  return ev.conn or ((ev.local_addr or "") .. ">" .. (ev.remote_addr or ""))
end

-- Starts following outbound connection c ({ cid, dst, sent, received, at }).
function Metrics:track(key, c)
  if self.n_conns >= self.max_connections then
    self:ignore("too_many_connections")
    return nil
  end
  self.conns[key] = c
  self.n_conns = self.n_conns + 1
  self:active_add(c.cid, c.dst, 1)
  return c
end

function Metrics:untrack(key)
  local c = self.conns[key]
  self.conns[key] = nil
  self.n_conns = self.n_conns - 1
  self:active_add(c.cid, c.dst, -1)
end

-- Adds what the totals of ev grew by since the last ones seen for c.
function Metrics:account(c, ev)
  local sent, received = tonumber(ev.bytes_sent), tonumber(ev.bytes_received)
  if sent and sent > c.sent then
    self:add("sent", sent - c.sent, c.cid, c.dst)
    c.sent = sent
  end
  if received and received > c.received then
    self:add("received", received - c.received, c.cid, c.dst)
    c.received = received
  end
end

-- The outbound connection of a progress or close event, or nil when it is
-- not measured. One not followed yet starts from zero, or from the totals it
-- had if it was dropped for silence; follow: follow it from now on.
function Metrics:connection(ev, cid, key, follow)
  local c = self.conns[key]
  if c or ev.role ~= "client" then
    return c
  end
  local dst = ev.remote_addr
  local skip, why = self.filter:skip_destination(dst)
  if skip then
    if why then
      self:ignore(why)
    end
    return nil
  end
  local gone = self.gone[key] or self.gone_before[key] or { 0, 0 }
  c = { cid = cid, dst = dst, sent = gone[1], received = gone[2], at = self:ts(ev) }
  if follow then
    return self:track(key, c)
  end
  return c
end

function Metrics:ts(ev)
  return tonumber(ev.ts) or self.now
end

local ON = {}

function ON.connect(self, ev, cid)
  local dst = ev.remote_addr
  local skip, why = self.filter:skip_destination(dst)
  if skip then
    return why and self:ignore(why)
  end
  local key = conn_key(ev)
  if self.conns[key] then
    self:untrack(key) -- its close was never seen
  end
  self:add("connects", 1, cid, dst)
  local ns = tonumber(ev.connect_ns)
  self:add("connect_time", ns and ns > 0 and ns / 1e9 or 0, cid, dst)
  self:add("sent", 0, cid, dst)
  self:add("received", 0, cid, dst)
  self:track(key, { cid = cid, dst = dst, sent = 0, received = 0, at = self:ts(ev) })
end

function ON.connect_failed(self, ev, cid)
  local dst = ev.remote_addr
  local skip, why = self.filter:skip_destination(dst)
  if skip then
    return why and self:ignore(why)
  end
  self:add("failed", 1, cid, dst)
end

function ON.listen(self, ev, cid)
  local addr = ev.local_addr
  local skip, why = self.filter:skip_listen(addr)
  if skip then
    return why and self:ignore(why)
  end
  local h = self:series("listen", cid, addr)
  if not h then
    return
  end
  local k = cid .. "\0" .. addr
  local l = self.listens[k] or { cid = cid, addr = addr, pids = {} }
  self.listens[k] = l
  l.pids[tostring(ev.pid)] = true
  h:set(1)
end

-- A listening socket closed.
function ON.listen_close(self, ev, cid)
  local k = cid .. "\0" .. tostring(ev.local_addr)
  local l = self.listens[k]
  if not l then
    return
  end
  l.pids[tostring(ev.pid)] = nil
  if next(l.pids) == nil then
    self.listens[k] = nil
    local h = self:series("listen", l.cid, l.addr)
    if h then
      h:set(0)
    end
  end
end

function ON.close(self, ev, cid)
  local key = conn_key(ev)
  local c = self:connection(ev, cid, key, false)
  if c then
    self:account(c, ev)
    if self.conns[key] then
      self:untrack(key)
    end
  end
end

function ON.progress(self, ev, cid)
  local c = self:connection(ev, cid, conn_key(ev), true)
  if c then
    self:account(c, ev)
    c.at = self:ts(ev)
  end
end

function ON.retransmit(self, ev)
  local c = self.conns[conn_key(ev)]
  if c then
    self:add("retransmits", 1, c.cid, c.dst)
  end
end

-- Accepted connections have no series of their own (their exchanges do).
function ON.accept()
end

-- A connection first seen mid-stream: its bytes are counted from the
-- progress and close events that follow.
function ON.found()
end

-- Takes a connection event (the tracer's shape: kind, ts, pid, container_id,
-- role, local_addr, remote_addr, connect_ns, bytes_sent, bytes_received, and
-- conn when the tracer gives connection ids). A container_id of false is a
-- process that is not measured.
function Metrics:on_conn_event(ev)
  local on = ON[ev.kind]
  if not on then
    return self:ignore("unknown_kind")
  end
  local cid = ev.container_id
  if cid == false then
    return self:ignore("not_measured")
  end
  if type(cid) ~= "string" then
    return self:ignore("no_container_id")
  end
  on(self, ev, cid)
end

-- Seconds from the request's first byte to the response's first, as coroot
-- times them; nil without a response.
local function response_time(ex)
  local from, to = tonumber(ex.request_start_ns), tonumber(ex.response_start_ns)
  if from and to and to > from then
    return (to - from) / 1e9
  end
  return nil
end

-- Takes a completed exchange (a protocol module's, with the tracer's role,
-- remote and container_id). A request that got no response counts with
-- status "unknown" and no response time.
function Metrics:on_exchange(ex)
  local p = PROTOCOLS[ex.protocol]
  local cid = ex.container_id
  if not p then
    return
  end
  if cid == false then
    return self:ignore("not_measured")
  end
  if type(cid) ~= "string" then
    return self:ignore("no_container_id")
  end
  local status, seconds = p.status(ex.status), response_time(ex)
  local h
  if ex.role == "client" then
    local dst = ex.remote
    local skip, why = self.filter:skip_destination(dst)
    if skip then
      return why and self:ignore(why)
    end
    self:add(p.client, 1, cid, dst, status)
    h = seconds and self:series(p.client_duration, cid, dst)
  elseif ex.role == "server" then
    self:add(p.server, 1, cid, status)
    h = seconds and self:series(p.server_duration, cid)
  else
    return self:ignore("unknown_role")
  end
  if h then
    h:observe(seconds)
  end
end

-- Periodic upkeep (every few seconds, now_ns on the events' clock): outbound
-- connections with no event for stale_ns are taken for closed (their close
-- was lost); their totals are kept for a while in case they show up again.
function Metrics:tick(now_ns)
  self.now = now_ns
  if now_ns < self.next_sweep then
    return
  end
  self.next_sweep = now_ns + self.stale_ns / 2
  self.gone_before, self.gone = self.gone, {}
  for key, c in pairs(self.conns) do
    if now_ns - c.at > self.stale_ns then
      self.gone[key] = { c.sent, c.received }
      self:untrack(key)
    end
  end
end

-- The state to hand to the next version across a hot reload (plain data):
-- give it to new() as opts.state.
function Metrics:export()
  local conns, listens = {}, {}
  for key, c in pairs(self.conns) do
    conns[#conns + 1] = { key, c.cid, c.dst, c.sent, c.received, c.at }
  end
  for _, l in pairs(self.listens) do
    listens[#listens + 1] = { l.cid, l.addr, l.pids }
  end
  return { conns = conns, listens = listens, series = self.known, gone = self.gone, now = self.now }
end

function Metrics:import(state)
  for key, cost in pairs(state.series or {}) do
    self.known[key] = cost
    self.n_series = self.n_series + cost
  end
  for _, c in ipairs(state.conns or {}) do
    self.conns[c[1]] = { cid = c[2], dst = c[3], sent = c[4], received = c[5], at = c[6] }
    self.n_conns = self.n_conns + 1
    local k = c[2] .. "\0" .. c[3]
    self.active[k] = (self.active[k] or 0) + 1
  end
  for _, l in ipairs(state.listens or {}) do
    self.listens[l[1] .. "\0" .. l[2]] = { cid = l[1], addr = l[2], pids = l[3] }
  end
  self.gone = state.gone or {}
  self.now = state.now or 0
end

-- Counts: { series, connections, listens }.
function Metrics:stats()
  local listens = 0
  for _ in pairs(self.listens) do
    listens = listens + 1
  end
  return { series = self.n_series, connections = self.n_conns, listens = listens }
end

-- new(registry, opts): the metrics, or nil and why. registry has
-- counter(name, help, labels), gauge(...) and histogram(name, help, labels,
-- buckets) as moonrover.agent has. opts (all optional):
--   max_series        series this module may create (default 10000)
--   max_connections   outbound connections followed at once (default 65536)
--   stale_ns          a connection with no event for this long is taken for
--                     closed (default 10 minutes)
--   ephemeral_ports, public_networks   see net/destination_filter.lua
--   buckets           histogram buckets (default Prometheus' defaults)
--   state             what export() returned in the previous version
function _M.new(registry, opts)
  opts = opts or {}
  local filter, err = destination_filter.new(opts)
  if not filter then
    return nil, err
  end
  local self = setmetatable({
    registry = registry,
    filter = filter,
    buckets = opts.buckets or _M.BUCKETS,
    max_series = opts.max_series or 10000,
    max_connections = opts.max_connections or 65536,
    stale_ns = opts.stale_ns or 600e9,
    handles = {}, known = {}, n_series = 0,
    conns = {}, n_conns = 0, active = {}, listens = {},
    gone = {}, gone_before = {},
    ignored = {}, now = 0, next_sweep = 0,
  }, Metrics)
  self.dropped = registry.counter("moonrover_net_metrics_series_dropped_total",
    "Updates of coroot-compatible network series not made: the series cap was reached")
  if opts.state then
    self:import(opts.state)
  end
  return self
end

return _M
