-- tracer.lua - turns the network streams into exchanges and connection
-- events. It keeps the connections (conn_table), finds each connection's
-- protocol from its first bytes (the protocol modules' detect), decides which
-- direction carries requests (a client writes them, a server reads them; for
-- a connection first seen mid-stream, what the first bytes look like says),
-- feeds each read or write to the protocol's parser, and hands on what the
-- parsers complete, with the connection's facts. A connection no protocol
-- recognises is switched to byte counting in the kernel (set_verdict).
--
-- Records of one connection arrive in order per direction, but connection
-- events and data come through separate queues, and under load the data
-- queue runs seconds behind the events': a connection is created by
-- whichever comes first, its facts filled in by the other; a close is acted
-- on once the data stream has reached it (data_ns, the latest data record's
-- time, or while no data comes, the time CLOSE_GRACE_NS ago), so that every
-- byte sent before the close is parsed first; parsers time out against the
-- same clock; an
-- exchange of a connection whose addresses are not known yet waits for them
-- (at most HOLD_NS). Everything the tracer keeps is plain tables: state()
-- hands it to the next version of a script at a hot reload.
--
-- A connection evicted from the table (more than max_connections open) ends
-- as a close does: its parser's on_close, then a "close" event (evicted =
-- true) with its totals so far. If it shows up again (the kernel still
-- follows it), it is a new entry whose totals count from what the eviction
-- reported (the ids of evicted connections are kept, at most max_connections
-- of them), so that consumers adding up close and progress totals count no
-- byte twice.
--
-- A connection first seen mid-stream (found) may start in the middle of a
-- message: a record counts as a try at classifying it only when its
-- direction is not the previous record's (a new message is likely there),
-- so a long body does not use up the tries; CLASSIFY_RECORDS records
-- without a protocol leave it unparsed whatever their directions.
local bit = require("bit")
local ffi = require("ffi")
local C = require("moonrover.consts")
local address = require("moonrover.net.address")
local conn_table = require("moonrover.net.conn_table")

local _M = {}
local mt = { __index = _M }

local EVENT_KINDS = { [C.MR_TCP_CONNECT] = "connect", [C.MR_TCP_CONNECT_FAILED] = "connect_failed",
  [C.MR_TCP_ACCEPT] = "accept", [C.MR_TCP_FOUND] = "found", [C.MR_TCP_CLOSE] = "close",
  [C.MR_TCP_RETRANSMIT] = "retransmit", [C.MR_TCP_LISTEN] = "listen", [C.MR_TCP_LISTEN_CLOSE] = "listen_close" }
local ROLE_UNKNOWN = C.MR_ROLE_UNKNOWN
local ROLES = { [ROLE_UNKNOWN] = "unknown", [C.MR_ROLE_CLIENT] = "client", [C.MR_ROLE_SERVER] = "server" }
local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local COUNT_ONLY = C.MR_NET_COUNT_ONLY
local NET_COUNT = C.MR_NET_COUNT -- the verdict: count bytes only

local CLASSIFY_TRIES = 8           -- direction changes looked at before a connection is left unparsed
local CLASSIFY_RECORDS = 64        -- records looked at before it is, whatever their directions
local CLOSE_GRACE_NS = 200e6
local CLOSE_SKEW_NS = 10e6 -- records of different CPUs reach the ring about in time order, not exactly
local HOLD_NS = 1e9
local NO_BASE = { [INGRESS] = 0, [EGRESS] = 0 }
local emit_to -- (self, conn, ex), below

local DEFAULTS = { max_connections = 65536, idle_ns = 500e6, progress_ns = 5e9 }

-- opts: protocols (list of protocol modules, tried in order), on_exchange(ex),
-- on_conn_event(ev), set_verdict(conn_id, verdict) (optional),
-- container_id(pid) (optional), hide(pid) -> whether the connections of
-- pid are left out (optional; stats().hidden counts them), max_connections,
-- idle_ns, progress_ns.
-- from: an earlier tracer's state().
function _M.new(opts, from)
  -- Short loops inside long traces (chunked bodies, the parsers' slow
  -- paths): with LuaJIT's default (a loop is compiled after 56 turns) the
  -- outer traces abort on them first until they are blacklisted; compiling
  -- loops after 8 turns makes the inner ones compile first (HTTP heads, once
  -- such a loop, are scanned in C now). It applies to this Lua state.
  jit.opt.start("hotloop=8")
  local self = setmetatable({ opts = opts, protocols = {}, protocol_list = opts.protocols or {} }, mt)
  for k, v in pairs(DEFAULTS) do
    self[k] = opts[k] or v
  end
  for _, p in ipairs(self.protocol_list) do
    self.protocols[p.name] = p
  end
  from = from or {}
  self.conns = conn_table.new(self.max_connections, from.conns)
  self.watch = from.watch or {} -- ids of connections whose parser may have something pending
  self.counts = from.counts or { exchanges = 0, gaps = 0, unclassified = 0, held_too_long = 0, hidden = 0 }
  self.gone = from.gone or { ids = {}, count = 0 } -- evicted connections: the totals reported
  self.last_progress_ns = from.last_progress_ns or 0
  self.data_ns = from.data_ns or 0
  self.data_ns_at_tick = self.data_ns
  self.emit = function(ex)
    emit_to(self, self.emitting, ex)
  end
  return self
end

function _M:state()
  return { conns = self.conns:state(), watch = self.watch, counts = self.counts, gone = self.gone,
    last_progress_ns = self.last_progress_ns, data_ns = self.data_ns }
end

function _M:stats()
  local c = self.counts
  return { connections = self.conns.count, evicted = self.conns.evicted, exchanges = c.exchanges, gaps = c.gaps,
    unclassified = c.unclassified, held_too_long = c.held_too_long, hidden = c.hidden or 0 }
end

-- A record's process name: a char array, or a string when records are
-- replayed as plain tables (specs, captures).
local function comm_of(e)
  return type(e.comm) == "string" and e.comm or ffi.string(e.comm)
end

local function is_request(conn, direction)
  if conn.role == "client" then
    return direction == EGRESS
  end
  return direction == INGRESS
end

local function conn_event(self, conn, kind, ts, extra)
  local ev = { kind = kind, ts = ts, pid = conn.pid, comm = conn.comm, role = conn.role,
    container_id = conn.container_id, local_addr = conn.local_addr, remote_addr = conn.remote_addr,
    conn = conn.id, bytes_sent = conn.bytes[EGRESS], bytes_received = conn.bytes[INGRESS] }
  for k, v in pairs(extra or {}) do
    ev[k] = v
  end
  if self.opts.on_conn_event then
    self.opts.on_conn_event(ev)
  end
end

-- The container of pid: a string, false when the process is not measured
-- (not in a container or service), nil when unknown.
local function container_of(self, pid)
  if self.opts.container_id then
    return self.opts.container_id(pid)
  end
  return nil
end

-- A connection whose process opts.hide(pid) says to leave out: its bytes
-- are only counted from now on, and its exchanges are not handed on. Asked
-- once per connection (and again if another process takes it over).
local function hide_if(self, conn, pid)
  local hidden = self.opts.hide(pid) and true or false
  if hidden and not conn.hidden then
    self.counts.hidden = (self.counts.hidden or 0) + 1
    if self.opts.set_verdict then
      self.opts.set_verdict(conn.id, NET_COUNT)
    end
  end
  conn.hidden = hidden
end

local function set_pid(self, conn, pid, comm)
  if pid and pid > 0 and conn.pid ~= pid then
    conn.pid = pid
    conn.container_id = container_of(self, pid)
    if self.opts.hide then
      hide_if(self, conn, pid)
    end
  end
  if comm and comm ~= "" then
    conn.comm = comm
  end
end

-- Hands the exchange on with the connection's facts, or holds it until the
-- connection's addresses are known.
local function deliver(self, conn, ex)
  ex.pid, ex.comm, ex.role, ex.conn, ex.tls = conn.pid, conn.comm, conn.role, conn.id, false
  ex.tid = conn.tid
  ex["local"], ex.remote, ex.container_id = conn.local_addr, conn.remote_addr, conn.container_id
  ex.local_port, ex.remote_port = conn.local_port, conn.remote_port
  ex.duration_ns = nil
  if ex.request_start_ns and ex.response_end_ns then
    ex.duration_ns = ex.response_end_ns - ex.request_start_ns
  end
  self.counts.exchanges = self.counts.exchanges + 1
  if self.opts.on_exchange and not conn.hidden then
    self.opts.on_exchange(ex)
  end
end

local function release_held(self, conn)
  local held = conn.held
  conn.held = nil
  for _, ex in ipairs(held or {}) do
    deliver(self, conn, ex)
  end
end

-- What a parser's emit does with an exchange of conn: hand it on, or hold
-- it until the connection's addresses are known.
emit_to = function(self, conn, ex)
  if conn.remote_addr then
    deliver(self, conn, ex)
    return
  end
  conn.held = conn.held or {}
  conn.held_since = conn.held_since or conn.last_ns
  conn.held[#conn.held + 1] = ex
  self.watch[conn.id] = true
end

-- The emit function given to the parsers: one for the tracer's life (making
-- a closure per call would keep LuaJIT from compiling the hot path), with
-- the connection being parsed set just before each parser call.
local function emit_for(self, conn)
  self.emitting = conn
  return self.emit
end

local finish

-- Remembers what an evicted connection's close event reported.
local function remember_gone(self, conn)
  local gone = self.gone
  if gone.count >= self.max_connections then
    gone.ids, gone.count = {}, 0
  end
  gone.ids[conn.id] = { [INGRESS] = conn.bytes[INGRESS], [EGRESS] = conn.bytes[EGRESS] }
  gone.count = gone.count + 1
end

local function new_conn(self, id, ts)
  local gone = self.gone.ids[id]
  local conn = { id = id, role = "unknown", opened_ns = ts, last_ns = ts, bytes = { [INGRESS] = 0, [EGRESS] = 0 },
    base = gone, next = {}, tries = 0, looked = 0 }
  if gone then
    self.gone.ids[id] = nil
    self.gone.count = self.gone.count - 1
  end
  local evicted = self.conns:add(conn)
  for _, old in ipairs(evicted or {}) do
    local open = not old.closing_ns
    old.closing_ns, old.evicted = old.closing_ns or old.last_ns, true
    finish(self, old)
    if open then
      remember_gone(self, old)
    end
  end
  return conn
end

local function fill_from_event(self, conn, e, kind)
  set_pid(self, conn, e.pid, comm_of(e))
  if e.role ~= ROLE_UNKNOWN then
    conn.role = ROLES[e.role]
  end
  -- A socket being closed has already let go of its local port: the
  -- addresses of its earlier events are the right ones.
  if not conn.remote_addr or kind ~= "close" then
    conn.family = e.family
    conn.local_addr = address.format(e.local_addr, e.family, e.local_port)
    conn.remote_addr = address.format(e.remote_addr, e.family, e.remote_port)
    conn.local_port, conn.remote_port = tonumber(e.local_port), tonumber(e.remote_port)
  end
  release_held(self, conn)
end

local function listen_event(self, e, kind, ts)
  if self.opts.on_conn_event then
    self.opts.on_conn_event({ kind = kind, ts = ts, pid = e.pid, comm = comm_of(e),
      container_id = container_of(self, e.pid),
      local_addr = address.format(e.local_addr, e.family, e.local_port), conn = tonumber(e.conn) })
  end
end

-- One struct mr_tcp_event.
function _M:on_tcp_event(e)
  local kind, ts, id = EVENT_KINDS[e.kind], tonumber(e.ts_ns), tonumber(e.conn)
  if kind == "listen" or kind == "listen_close" then
    return listen_event(self, e, kind, ts)
  end
  if not kind then
    return
  end
  local conn = self.conns:get(id) or new_conn(self, id, ts)
  fill_from_event(self, conn, e, kind)
  if kind == "close" then
    conn.closing_ns = ts
    conn.closed_sent, conn.closed_received = tonumber(e.bytes_sent), tonumber(e.bytes_received)
    conn.retransmits = e.retransmits
    self.watch[id] = true
    return
  end
  local connecting = kind == "connect" or kind == "connect_failed"
  conn_event(self, conn, kind, ts, connecting and { connect_ns = tonumber(e.duration_ns) } or nil)
  if kind == "connect_failed" then
    self.conns:remove(id)
    self.watch[id] = nil
  end
end

local function give_up(self, conn)
  conn.proto = false
  self.counts.unclassified = self.counts.unclassified + 1
  if self.opts.set_verdict then
    self.opts.set_verdict(conn.id, NET_COUNT)
  end
end

-- The protocol whose first message these bytes look like; sets the role of
-- a connection first seen mid-stream from what the bytes are.
local function classify(self, conn, direction, ptr, copied)
  local turn = conn.last_direction ~= direction
  conn.last_direction = direction
  for _, p in ipairs(self.protocol_list) do
    if conn.role ~= "unknown" then
      if p.detect(ptr, copied, is_request(conn, direction)) then
        return p
      end
    elseif p.detect(ptr, copied, true) then
      conn.role = direction == EGRESS and "client" or "server"
      return p
    elseif p.detect(ptr, copied, false) then
      conn.role = direction == EGRESS and "server" or "client"
      return p
    end
  end
  conn.tries = conn.tries + (turn and 1 or 0)
  conn.looked = (conn.looked or 0) + 1
  if conn.tries >= CLASSIFY_TRIES or conn.looked >= CLASSIFY_RECORDS then
    give_up(self, conn)
  end
end

local function parse(self, conn, r, ptr, ts)
  local p = conn.proto and self.protocols[conn.proto]
  if conn.proto == nil and r.copied > 0 then
    p = classify(self, conn, r.direction, ptr, r.copied)
    if p then
      conn.proto, conn.pstate = p.name, p.new_state()
    end
  end
  if p then
    p.on_data(conn.pstate, is_request(conn, r.direction), ptr, r.copied, r.len, ts, emit_for(self, conn))
    self.watch[conn.id] = true
  end
end

-- One struct mr_net_data and its payload (a const uint8_t *).
function _M:on_data(r, ptr)
  local id, ts, direction = tonumber(r.conn), tonumber(r.ts_ns), r.direction
  local conn = self.conns:get(id) or new_conn(self, id, ts)
  local offset = tonumber(r.offset)
  set_pid(self, conn, r.pid)
  conn.tid = r.tid
  if conn.role == "unknown" and r.role ~= ROLE_UNKNOWN then
    conn.role = ROLES[r.role]
  end
  conn.last_ns = ts
  if ts > self.data_ns then
    self.data_ns = ts
  end
  conn.bytes[direction] = conn.bytes[direction] + r.len
  if bit.band(r.flags, COUNT_ONLY) ~= 0 then
    return
  end
  local expected = conn.next[direction]
  conn.next[direction] = offset + r.len
  if expected and offset > expected and conn.proto then
    self.counts.gaps = self.counts.gaps + 1
    self.protocols[conn.proto].on_gap(conn.pstate, is_request(conn, direction))
  end
  if conn.proto ~= false then
    parse(self, conn, r, ptr, ts)
  end
end

-- The record types, looked up at first use: the runtime declares them, and
-- the specs that replay plain tables never load it.
local record_ptr, size_ptr, header_bytes

-- A run of n records of the net stream at base (a uint8_t *): each after an
-- 8-byte prefix holding its size, the next prefix at its end rounded up to 8
-- (see mr_data_plane_peek_bytes).
function _M:on_data_run(base, n)
  if not record_ptr then
    record_ptr, size_ptr = ffi.typeof("struct mr_net_data *"), ffi.typeof("uint32_t *")
    header_bytes = ffi.sizeof("struct mr_net_data")
  end
  local at = 0
  for _ = 1, n do
    local size = ffi.cast(size_ptr, base + at)[0]
    local record = base + at + 8
    self:on_data(ffi.cast(record_ptr, record), record + header_bytes)
    at = at + bit.band(8 + size + 7, -8)
  end
end

-- Ends a connection: closed (after its grace) or evicted.
function finish(self, conn)
  local p = conn.proto and self.protocols[conn.proto]
  if p then
    p.on_close(conn.pstate, conn.closing_ns, emit_for(self, conn))
  end
  if conn.held then
    self.counts.held_too_long = self.counts.held_too_long + #conn.held
    release_held(self, conn)
  end
  local base = conn.base or NO_BASE
  conn.bytes[EGRESS] = math.max(conn.bytes[EGRESS], (conn.closed_sent or 0) - base[EGRESS])
  conn.bytes[INGRESS] = math.max(conn.bytes[INGRESS], (conn.closed_received or 0) - base[INGRESS])
  conn_event(self, conn, "close", conn.closing_ns, { retransmits = conn.retransmits, evicted = conn.evicted })
  self.conns:remove(conn.id)
  self.watch[conn.id] = nil
end

-- A watched connection, looked at on a tick: closed and its data all
-- parsed, held exchanges too old, a parser waiting on an end it cannot see.
local function look_at(self, conn, now)
  if conn.closing_ns and self.data_ns - conn.closing_ns >= CLOSE_SKEW_NS then
    return finish(self, conn)
  end
  if conn.held and now - conn.held_since >= HOLD_NS then
    self.counts.held_too_long = self.counts.held_too_long + #conn.held
    conn.held_since = nil
    release_held(self, conn)
  end
  local p = conn.proto and self.protocols[conn.proto]
  if p and p.on_idle then
    p.on_idle(conn.pstate, self.data_ns, self.idle_ns, emit_for(self, conn))
  end
  if not conn.closing_ns and not conn.held and now - conn.last_ns > 4 * self.idle_ns then
    self.watch[conn.id] = nil
  end
end

-- Every open connection's byte totals so far, idle ones too: consumers
-- count deltas, and an open connection that is never reported again can be
-- taken for gone.
local function progress(self, now)
  for _, conn in self.conns:each() do
    if not conn.closing_ns then
      conn_event(self, conn, "progress", now)
    end
  end
  self.last_progress_ns = now
end

-- Time passes (now: CLOCK_MONOTONIC ns); call it every 100-200 ms. drained:
-- the caller has fed every record it had (its queue is empty); without it,
-- a tick with no data since the last one says the same.
function _M:tick(now, drained)
  if drained then
    self.data_ns = math.max(self.data_ns, now)
  elseif self.data_ns == self.data_ns_at_tick then
    self.data_ns = math.max(self.data_ns, now - CLOSE_GRACE_NS + CLOSE_SKEW_NS)
  end
  self.data_ns_at_tick = self.data_ns
  for id in pairs(self.watch) do
    local conn = self.conns:get(id)
    if conn then
      look_at(self, conn, now)
    else
      self.watch[id] = nil
    end
  end
  if now - self.last_progress_ns >= self.progress_ns then
    progress(self, now)
  end
end

return _M
