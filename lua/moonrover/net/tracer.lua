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
-- same clock; an exchange of a connection whose addresses are not known yet
-- waits for them (at most HOLD_NS). Addresses are taken from the first
-- event that has them; a later close or found event, whose socket may have
-- let go of its port, never replaces them with a port 0 one.
--
-- Memory: a connection is a slot of conn_table's columns (about 200 bytes);
-- its parser's state is dropped when the connection has been idle a while
-- and the parser says it holds nothing (p.at_rest), and made again at its
-- next bytes. Against the script's memory budget (opts.memory_limit), which
-- counts garbage too: above LOW_WATER of it the collector is made to run
-- without pause and harder, and each tick takes a bounded step of it (a
-- full collection of a 100 MB heap took 180-240 ms, too long for one
-- call); above HIGH_WATER new connections are not parsed but only counted
-- in the kernel (counted `shed`), and connections idle for EVICT_IDLE_NS
-- are evicted as the walk of the slots comes to them, until it is below
-- LOW_WATER.
--
-- Time: every call is bounded whatever the number of connections (a
-- script's call runs under a time budget, 500 ms by default): a tick looks
-- at most WATCH_PER_TICK watched connections, makes at most
-- PROGRESS_PER_TICK progress events and walks SWEEP_SLOTS slots, each
-- carrying the rest over to the next tick; a connection past
-- max_connections evicts one chosen from a sample (no sort).
--
-- Connections are never forgotten: each tick a bounded walk of the slots
-- finds those idle for EXPIRE_CHECK_NS and asks the kernel whether it still
-- follows them (opts.conn_open); one it does not follow (its close event
-- was lost) ends as closed, counted `expired`. Without conn_open, one idle
-- for expire_ns ends so. Progress events (every progress_ns) are made only
-- for the connections whose bytes moved, and the walk refreshes the others
-- every REFRESH_NS, within the 10 minutes after which consumers take a
-- silent connection for gone (net/coroot_metrics.lua).
--
-- Capture requests: a parser's on_data may return the bytes after the piece
-- that are body it does not need; from SKIP_MIN bytes on the tracer asks
-- the kernel not to copy them (opts.set_capture(conn, direction, skip_to)).
-- Bytes the kernel then did not copy reach the parser as pieces with no
-- copy (ptr nil, copied 0): a record's first `skipped` bytes, or the jump of
-- offsets up to the asked skip_to; a jump past it is a gap.
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
--
-- state() hands everything to the next version of a script at a hot reload
-- as plain tables; new() rebuilds the columns from them.
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
local ROLE_UNKNOWN, CLIENT, SERVER = C.MR_ROLE_UNKNOWN, C.MR_ROLE_CLIENT, C.MR_ROLE_SERVER
local ROLES = { [ROLE_UNKNOWN] = "unknown", [CLIENT] = "client", [SERVER] = "server" }
local INGRESS, EGRESS = C.MR_NET_INGRESS, C.MR_NET_EGRESS
local COUNT_ONLY = C.MR_NET_COUNT_ONLY
local NET_COUNT = C.MR_NET_COUNT -- the verdict: count bytes only
local NO_PROTO, UNKNOWN = conn_table.NO_PROTO, conn_table.UNKNOWN
local HIDDEN, MOVED, EVICTED, WATCHED = conn_table.HIDDEN, conn_table.MOVED, conn_table.EVICTED, conn_table.WATCHED
local band, bor, bnot = bit.band, bit.bor, bit.bnot

local CLASSIFY_TRIES = 8           -- direction changes looked at before a connection is left unparsed
local CLASSIFY_RECORDS = 64        -- records looked at before it is, whatever their directions
local CLOSE_GRACE_NS = 200e6
local CLOSE_SKEW_NS = 10e6 -- records of different CPUs reach the ring about in time order, not exactly
local HOLD_NS = 1e9
local EXPIRE_CHECK_NS = 30e9 -- idle this long: ask the kernel whether it still follows the connection
local REFRESH_NS = 300e9     -- a progress event at least this often, moved or not
local SWEEP_SLOTS = 4096     -- slots walked per tick
local SWEEP_CHECKS = 256     -- kernel lookups per tick
local WATCH_PER_TICK = 4096  -- watched connections looked at per tick
local PROGRESS_PER_TICK = 2048 -- progress events made per tick
local EVICT_PER_TICK = 256   -- idle connections evicted per tick while shedding
local EVICT_SAMPLE = 32      -- slots looked at to choose the one to evict
local HIGH_WATER, LOW_WATER = 0.7, 0.55 -- of the memory budget
local GC_PAUSE, GC_STEPMUL = 100, 400   -- the collector above LOW_WATER
local GC_STEP_KB = 128       -- its step per tick there
local EVICT_IDLE_NS = 10e9
_M.SKIP_MIN = 16384          -- body bytes worth asking the kernel not to copy

local emit_to -- (self, slot, ex), below

local DEFAULTS = { max_connections = 65536, idle_ns = 500e6, progress_ns = 5e9, expire_ns = 600e9 }

-- opts: protocols (list of protocol modules, tried in order), on_exchange(ex),
-- on_conn_event(ev), set_verdict(conn_id, verdict), set_capture(conn_id,
-- direction, skip_to), conn_open(conn_id) -> whether the kernel still
-- follows it (each optional), container_id(pid) (optional), hide(pid) ->
-- whether the connections of pid are left out (optional; stats().hidden
-- counts them), memory_limit (bytes of the Lua state's budget; none: no
-- shedding), max_connections, idle_ns, progress_ns, expire_ns.
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
  for i, p in ipairs(self.protocol_list) do
    self.protocols[p.name] = i
  end
  from = from or {}
  self.conns = conn_table.new(self.max_connections)
  self.conns.evicted = from.evicted or 0
  self.held = {}      -- slot -> exchanges waiting for the connection's addresses
  self.held_since = {}
  self.closing = {}   -- slot -> { ts, bytes sent, received, retransmits } of its close event
  self.base = {}      -- slot -> the totals an eviction reported, when the connection came back
  self.counts = from.counts or {}
  for _, k in ipairs({ "exchanges", "gaps", "unclassified", "held_too_long", "hidden", "expired", "shed" }) do
    self.counts[k] = self.counts[k] or 0
  end
  self.gone = from.gone or { ids = {}, count = 0 } -- evicted connections: the totals reported
  self.last_progress_ns = from.last_progress_ns or 0
  self.data_ns = from.data_ns or 0
  self.data_ns_at_tick, self.tick_ns = self.data_ns, -math.huge -- no tick yet
  self.cursor, self.shedding, self.pressed = 0, false, false
  self.emit = function(ex)
    emit_to(self, self.emitting, ex)
  end
  for _, c in ipairs(from.conns or {}) do
    self:restore(c)
  end
  return self
end

-- ------------------------------------------------------------ hand-over

local function pair(col, slot)
  return { col[2 * slot], col[2 * slot + 1] }
end

local function set_pair(col, slot, v)
  col[2 * slot], col[2 * slot + 1] = v[1], v[2]
end

-- The name of a connection's protocol as handed over: false when it has
-- none (NO_PROTO), nil while not known.
local function proto_name(self, proto)
  if proto == NO_PROTO then
    return false
  end
  return proto > 0 and self.protocol_list[proto].name or nil
end

-- One connection as plain data.
local function saved(self, slot)
  local t, proto = self.conns, self.conns.proto[slot]
  local container = t.container[slot]
  return { id = t.id[slot], last_ns = t.last_ns[slot], reported_ns = t.reported_ns[slot], pid = t.pid[slot],
    tid = t.tid[slot], local_port = t.local_port[slot], remote_port = t.remote_port[slot], role = t.role[slot],
    proto = proto_name(self, proto),
    tries = t.tries[slot], looked = t.looked[slot], last_dir = t.last_dir[slot], flags = t.flags[slot],
    bytes = pair(t.bytes, slot), next = pair(t.next, slot), skip_to = pair(t.skip_to, slot),
    local_addr = t.local_addr[slot], remote_addr = t.remote_addr[slot], comm = t.comm[slot],
    container = container ~= UNKNOWN and container or nil, pstate = t.pstate[slot],
    held = self.held[slot], held_since = self.held_since[slot], closing = self.closing[slot],
    base = self.base[slot], watch = band(t.flags[slot], WATCHED) ~= 0 or nil }
end

-- A connection of an earlier tracer's state().
function _M:restore(c)
  local t = self.conns
  local slot = t:add(c.id, c.last_ns)
  t.reported_ns[slot], t.pid[slot], t.tid[slot] = c.reported_ns, c.pid, c.tid
  t.local_port[slot], t.remote_port[slot], t.role[slot] = c.local_port, c.remote_port, c.role
  local k = c.proto and self.protocols[c.proto]
  t.proto[slot] = k or (c.proto == nil and 0 or NO_PROTO)
  t.tries[slot], t.looked[slot], t.last_dir[slot] = c.tries, c.looked, c.last_dir
  t.flags[slot] = bor(t.flags[slot], band(c.flags, HIDDEN + EVICTED))
  set_pair(t.bytes, slot, c.bytes)
  set_pair(t.next, slot, c.next)
  set_pair(t.skip_to, slot, c.skip_to)
  t.local_addr[slot], t.remote_addr[slot], t.comm[slot] = c.local_addr, c.remote_addr, c.comm
  if c.container ~= nil then
    t.container[slot] = c.container
  end
  t.pstate[slot] = k and c.pstate or false
  self.held[slot], self.held_since[slot], self.closing[slot] = c.held, c.held_since, c.closing
  self.base[slot] = c.base
  if band(c.flags, MOVED) ~= 0 then
    t:mark(slot, MOVED)
  end
  if c.watch then
    t:mark(slot, WATCHED)
  end
end

function _M:state()
  local conns = {}
  for slot in self.conns:each() do
    conns[#conns + 1] = saved(self, slot)
  end
  return { conns = conns, evicted = self.conns.evicted, counts = self.counts, gone = self.gone,
    last_progress_ns = self.last_progress_ns, data_ns = self.data_ns }
end

function _M:stats()
  local c = self.counts
  return { connections = self.conns.count, evicted = self.conns.evicted, exchanges = c.exchanges, gaps = c.gaps,
    unclassified = c.unclassified, held_too_long = c.held_too_long, hidden = c.hidden, expired = c.expired,
    shed = c.shed }
end

-- ------------------------------------------------------------ facts

-- A record's process name: a char array, or a string when records are
-- replayed as plain tables (specs, captures).
local function comm_of(e)
  return type(e.comm) == "string" and e.comm or ffi.string(e.comm)
end

local function is_request(t, slot, direction)
  if t.role[slot] == CLIENT then
    return direction == EGRESS
  end
  return direction == INGRESS
end

local function conn_event(self, slot, kind, ts)
  local t = self.conns
  local container = t.container[slot]
  return { kind = kind, ts = ts, pid = t.pid[slot], comm = t.comm[slot] or nil, role = ROLES[t.role[slot]],
    container_id = container ~= UNKNOWN and container or nil, local_addr = t.local_addr[slot] or nil,
    remote_addr = t.remote_addr[slot] or nil, conn = t.id[slot], bytes_sent = t.bytes[2 * slot + EGRESS],
    bytes_received = t.bytes[2 * slot + INGRESS] }
end

local function send_event(self, ev)
  if self.opts.on_conn_event then
    self.opts.on_conn_event(ev)
  end
end

-- The container of pid: a string, false when the process is not measured
-- (not in a container or service), UNKNOWN when not known.
local function container_of(self, pid)
  local cid
  if self.opts.container_id then
    cid = self.opts.container_id(pid)
  end
  if cid == nil then
    return UNKNOWN
  end
  return cid
end

-- A connection whose process opts.hide(pid) says to leave out: its bytes
-- are only counted from now on, and its exchanges are not handed on. Asked
-- once per connection (and again if another process takes it over).
local function hide_if(self, slot, pid)
  local t = self.conns
  local hidden = self.opts.hide(pid) and true or false
  local was = band(t.flags[slot], HIDDEN) ~= 0
  if hidden and not was then
    self.counts.hidden = self.counts.hidden + 1
    if self.opts.set_verdict then
      self.opts.set_verdict(t.id[slot], NET_COUNT)
    end
  end
  t.flags[slot] = hidden and bor(t.flags[slot], HIDDEN) or band(t.flags[slot], bnot(HIDDEN))
end

local function set_pid(self, slot, pid, comm)
  local t = self.conns
  if pid and pid > 0 and t.pid[slot] ~= pid then
    t.pid[slot] = pid
    t.container[slot] = container_of(self, pid)
    if self.opts.hide then
      hide_if(self, slot, pid)
    end
  end
  if comm and comm ~= "" then
    t.comm[slot] = comm
  end
end

-- ------------------------------------------------------------ exchanges

-- Hands the exchange on with the connection's facts.
local function deliver(self, slot, ex)
  local t = self.conns
  local container = t.container[slot]
  ex.pid, ex.comm, ex.role, ex.conn, ex.tls = t.pid[slot], t.comm[slot] or nil, ROLES[t.role[slot]], t.id[slot], false
  ex.tid = t.tid[slot]
  ex["local"], ex.remote = t.local_addr[slot] or nil, t.remote_addr[slot] or nil
  ex.container_id = container ~= UNKNOWN and container or nil
  ex.local_port, ex.remote_port = t.local_port[slot], t.remote_port[slot]
  ex.duration_ns = nil
  if ex.request_start_ns and ex.response_end_ns then
    ex.duration_ns = ex.response_end_ns - ex.request_start_ns
  end
  self.counts.exchanges = self.counts.exchanges + 1
  if self.opts.on_exchange and band(t.flags[slot], HIDDEN) == 0 then
    self.opts.on_exchange(ex)
  end
end

local function release_held(self, slot)
  local held = self.held[slot]
  self.held[slot], self.held_since[slot] = nil, nil
  for _, ex in ipairs(held or {}) do
    deliver(self, slot, ex)
  end
end

-- What a parser's emit does with an exchange of slot: hand it on, or hold
-- it until the connection's addresses are known.
emit_to = function(self, slot, ex)
  if self.conns.remote_addr[slot] then
    deliver(self, slot, ex)
    return
  end
  local held = self.held[slot] or {}
  self.held[slot] = held
  self.held_since[slot] = self.held_since[slot] or self.conns.last_ns[slot]
  held[#held + 1] = ex
  self.conns:mark(slot, WATCHED)
end

-- The emit function given to the parsers: one for the tracer's life (making
-- a closure per call would keep LuaJIT from compiling the hot path), with
-- the connection being parsed set just before each parser call.
local function emit_for(self, slot)
  self.emitting = slot
  return self.emit
end

-- ------------------------------------------------------------ connections

local finish

-- Remembers what an evicted connection's close event reported.
local function remember_gone(self, slot)
  local gone, t = self.gone, self.conns
  if gone.count >= self.max_connections then
    gone.ids, gone.count = {}, 0
  end
  gone.ids[t.id[slot]] = { [INGRESS] = t.bytes[2 * slot + INGRESS], [EGRESS] = t.bytes[2 * slot + EGRESS] }
  gone.count = gone.count + 1
end

-- Ends slot's connection as evicted.
local function evict(self, slot)
  local t = self.conns
  local open = not self.closing[slot]
  if open then
    self.closing[slot] = { t.last_ns[slot], 0, 0, 0 }
  end
  t.flags[slot] = bor(t.flags[slot], EVICTED)
  if open then
    remember_gone(self, slot)
  end
  finish(self, slot)
  t.evicted = t.evicted + 1
end

local function new_conn(self, id, ts)
  local t, gone = self.conns, self.gone.ids[id]
  if gone then
    self.gone.ids[id] = nil
    self.gone.count = self.gone.count - 1
  end
  if t:full() then
    evict(self, t:least_recent(EVICT_SAMPLE))
  end
  local slot = t:add(id, ts)
  self.base[slot] = gone
  return slot
end

-- Takes the addresses of event e: when none are known, or when e's are
-- whole (no port 0) and either those known are not or e is not a close or
-- found event (a socket being closed has let go of its local port).
local function take_addresses(t, slot, e, kind)
  local lport, rport = tonumber(e.local_port), tonumber(e.remote_port)
  local whole = lport ~= 0 and rport ~= 0
  local known_whole = t.local_port[slot] ~= 0 and t.remote_port[slot] ~= 0
  if t.remote_addr[slot] and not (whole and (not known_whole or (kind ~= "close" and kind ~= "found"))) then
    return
  end
  t.local_addr[slot] = address.format(e.local_addr, e.family, e.local_port)
  t.remote_addr[slot] = address.format(e.remote_addr, e.family, e.remote_port)
  t.local_port[slot], t.remote_port[slot] = lport, rport
end

local function fill_from_event(self, slot, e, kind)
  local t = self.conns
  set_pid(self, slot, e.pid, comm_of(e))
  if e.role ~= ROLE_UNKNOWN then
    t.role[slot] = e.role
  end
  take_addresses(t, slot, e, kind)
  release_held(self, slot)
end

local function listen_event(self, e, kind, ts)
  send_event(self, { kind = kind, ts = ts, pid = e.pid, comm = comm_of(e),
    container_id = self.opts.container_id and self.opts.container_id(e.pid) or nil,
    local_addr = address.format(e.local_addr, e.family, e.local_port), conn = tonumber(e.conn) })
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
  local t = self.conns
  local slot = t:get(id) or new_conn(self, id, ts)
  fill_from_event(self, slot, e, kind)
  if kind == "close" then
    self.closing[slot] = { ts, tonumber(e.bytes_sent), tonumber(e.bytes_received), e.retransmits }
    self.conns:mark(slot, WATCHED)
    return
  end
  local ev = conn_event(self, slot, kind, ts)
  if kind == "connect" or kind == "connect_failed" then
    ev.connect_ns = tonumber(e.duration_ns)
  end
  send_event(self, ev)
  if kind == "connect_failed" then
    self:forget(slot)
  end
end

-- Removes slot's connection with nothing more said of it.
function _M:forget(slot)
  self.held[slot], self.held_since[slot] = nil, nil
  self.closing[slot], self.base[slot] = nil, nil
  self.conns:remove(slot)
end

-- ------------------------------------------------------------ data

local function give_up(self, slot, count)
  self.conns.proto[slot] = NO_PROTO
  self.counts[count] = self.counts[count] + 1
  if self.opts.set_verdict then
    self.opts.set_verdict(self.conns.id[slot], NET_COUNT)
  end
end

-- The index of the protocol whose first message these bytes look like;
-- sets the role of a connection first seen mid-stream from what the bytes
-- are.
local function classify(self, slot, direction, ptr, copied)
  local t = self.conns
  local turn = t.last_dir[slot] ~= direction
  t.last_dir[slot] = direction
  local list = self.protocol_list
  for i = 1, #list do
    local p = list[i]
    if t.role[slot] ~= ROLE_UNKNOWN then
      if p.detect(ptr, copied, is_request(t, slot, direction)) then
        return i
      end
    elseif p.detect(ptr, copied, true) then
      t.role[slot] = direction == EGRESS and CLIENT or SERVER
      return i
    elseif p.detect(ptr, copied, false) then
      t.role[slot] = direction == EGRESS and SERVER or CLIENT
      return i
    end
  end
  t.tries[slot] = t.tries[slot] + (turn and 1 or 0)
  t.looked[slot] = t.looked[slot] + 1
  if t.tries[slot] >= CLASSIFY_TRIES or t.looked[slot] >= CLASSIFY_RECORDS then
    give_up(self, slot, "unclassified")
  end
end

-- Asks the kernel not to copy the skip body bytes after a piece that ends
-- at stream offset at, when worth it.
local function capture(self, slot, direction, at, skip)
  if not skip or skip < _M.SKIP_MIN or not self.opts.set_capture then
    return
  end
  local t, k = self.conns, 2 * slot + direction
  local skip_to = at + skip
  if skip_to > t.skip_to[k] then
    t.skip_to[k] = skip_to
    self.opts.set_capture(t.id[slot], direction, skip_to)
  end
end

-- Feeds a piece to slot's parser p (an index): bytes at ptr, copied of
-- len; at: the stream offset where the piece ends.
local function feed(self, slot, p, direction, ptr, copied, len, ts, at)
  local t = self.conns
  local module = self.protocol_list[p]
  local state = t.pstate[slot]
  if not state then
    state = module.new_state()
    t.pstate[slot] = state
  end
  local skip = module.on_data(state, is_request(t, slot, direction), ptr, copied, len, ts, emit_for(self, slot))
  capture(self, slot, direction, at, skip)
  self.conns:mark(slot, WATCHED)
end

local function parse(self, slot, r, ptr, ts, skipped, at)
  local t = self.conns
  local p = t.proto[slot]
  if p == 0 and r.copied > 0 then
    if self.shedding then
      return give_up(self, slot, "shed")
    end
    p = classify(self, slot, r.direction, ptr, r.copied)
    if not p then
      return
    end
    t.proto[slot] = p
  end
  if p > 0 and p ~= NO_PROTO then
    if skipped > 0 then
      feed(self, slot, p, r.direction, nil, 0, skipped, ts, at - r.len + skipped)
    end
    feed(self, slot, p, r.direction, ptr, r.copied, r.len - skipped, ts, at)
  end
end

-- A record's offset past the one expected: body bytes the tracer asked not
-- to copy (fed as a piece without copy), else a gap.
local function jumped(self, slot, direction, expected, offset, ts)
  local t = self.conns
  local p = t.proto[slot]
  if p == 0 or p == NO_PROTO then
    return
  end
  if offset <= t.skip_to[2 * slot + direction] then
    return feed(self, slot, p, direction, nil, 0, offset - expected, ts, offset)
  end
  self.counts.gaps = self.counts.gaps + 1
  local state = t.pstate[slot]
  if state then
    self.protocol_list[p].on_gap(state, is_request(t, slot, direction))
  end
end

-- One struct mr_net_data and its payload (a const uint8_t *). skipped: the
-- record's bytes not copied at its start because a skip was asked (else
-- r.skipped, or none).
function _M:on_data(r, ptr, skipped)
  local id, ts, direction = tonumber(r.conn), tonumber(r.ts_ns), r.direction
  local t = self.conns
  local slot = t:get(id) or new_conn(self, id, ts)
  local offset = tonumber(r.offset)
  set_pid(self, slot, r.pid)
  t.tid[slot] = r.tid or 0
  if t.role[slot] == ROLE_UNKNOWN and r.role ~= ROLE_UNKNOWN then
    t.role[slot] = r.role
  end
  t.last_ns[slot] = ts
  if ts > self.data_ns then
    self.data_ns = ts
  end
  local k = 2 * slot + direction
  t.bytes[k] = t.bytes[k] + r.len
  if band(t.flags[slot], MOVED) == 0 then
    t:mark(slot, MOVED)
  end
  if band(r.flags, COUNT_ONLY) ~= 0 then
    return
  end
  local expected = t.next[k]
  local at = offset + r.len
  t.next[k] = at
  if expected >= 0 and offset > expected then
    jumped(self, slot, direction, expected, offset, ts)
  end
  if t.proto[slot] ~= NO_PROTO then
    parse(self, slot, r, ptr, ts, skipped or r.skipped or 0, at)
  end
end

-- The record types, looked up at first use: the runtime declares them, and
-- the specs that replay plain tables never load it.
local record_ptr, size_ptr, header_bytes, skipped_field

-- A run of n records of the net stream at base (a uint8_t *): each after an
-- 8-byte prefix holding its size, the next prefix at its end rounded up to 8
-- (see mr_data_plane_peek_bytes).
function _M:on_data_run(base, n)
  if not record_ptr then
    record_ptr, size_ptr = ffi.typeof("struct mr_net_data *"), ffi.typeof("uint32_t *")
    header_bytes = ffi.sizeof("struct mr_net_data")
    -- the runtime's records name it once the kernel side skips bodies
    skipped_field = ffi.offsetof("struct mr_net_data", "skipped") and "skipped" or "pad2"
  end
  local at = 0
  for _ = 1, n do
    local size = ffi.cast(size_ptr, base + at)[0]
    local record = base + at + 8
    local r = ffi.cast(record_ptr, record)
    self:on_data(r, record + header_bytes, r[skipped_field])
    at = at + band(8 + size + 7, -8)
  end
end

-- Ends a connection: closed (after its grace), evicted or expired.
function finish(self, slot, expired)
  local t = self.conns
  local p, state = t.proto[slot], t.pstate[slot]
  local closing = self.closing[slot]
  if p > 0 and p ~= NO_PROTO and state then
    self.protocol_list[p].on_close(state, closing[1], emit_for(self, slot))
  end
  if self.held[slot] then
    self.counts.held_too_long = self.counts.held_too_long + #self.held[slot]
    release_held(self, slot)
  end
  local base = self.base[slot] or { [INGRESS] = 0, [EGRESS] = 0 }
  local out, inn = 2 * slot + EGRESS, 2 * slot + INGRESS
  t.bytes[out] = math.max(t.bytes[out], (closing[2] or 0) - base[EGRESS])
  t.bytes[inn] = math.max(t.bytes[inn], (closing[3] or 0) - base[INGRESS])
  local ev = conn_event(self, slot, "close", closing[1])
  ev.retransmits = closing[4]
  ev.evicted = band(t.flags[slot], EVICTED) ~= 0 or nil
  ev.expired = expired
  send_event(self, ev)
  self:forget(slot)
end

-- ------------------------------------------------------------ time

-- A watched connection, looked at on a tick: closed and its data all
-- parsed, held exchanges too old, a parser waiting on an end it cannot see;
-- idle a while, it is not watched any more, and its parser's state is
-- dropped if it holds nothing.
local function look_at(self, slot, now)
  local closing = self.closing[slot]
  if closing and self.data_ns - closing[1] >= CLOSE_SKEW_NS then
    return finish(self, slot)
  end
  if self.held[slot] and now - self.held_since[slot] >= HOLD_NS then
    self.counts.held_too_long = self.counts.held_too_long + #self.held[slot]
    release_held(self, slot)
  end
  local t = self.conns
  local p, state = t.proto[slot], t.pstate[slot]
  local module = p > 0 and p ~= NO_PROTO and self.protocol_list[p]
  if module and state and module.on_idle then
    module.on_idle(state, self.data_ns, self.idle_ns, emit_for(self, slot))
  end
  if not closing and not self.held[slot] and now - t.last_ns[slot] > 4 * self.idle_ns then
    t.flags[slot] = band(t.flags[slot], bnot(WATCHED))
    if module and state and module.at_rest and module.at_rest(state) then
      t.pstate[slot] = false
    end
  end
end

local function progress_event(self, slot, now)
  self.conns.reported_ns[slot] = now
  send_event(self, conn_event(self, slot, "progress", now))
end

-- The next WATCH_PER_TICK watched connections: a walk of the queue of
-- them as it was when the last walk ended (those watched since wait for the
-- next); one still watched after it was looked at is queued again.
local function look_at_watched(self, now)
  local t = self.conns
  if t:walk_over(WATCHED) then
    t:start_walk(WATCHED)
  end
  for _ = 1, WATCH_PER_TICK do
    local slot = t:walk_next(WATCHED)
    if not slot then
      return
    end
    if band(t.flags[slot], WATCHED) ~= 0 and t:in_use(slot) then
      look_at(self, slot, now)
      if band(t.flags[slot], WATCHED) ~= 0 and t:in_use(slot) then
        t:mark(slot, WATCHED)
      end
    end
  end
end

-- The byte totals of the connections that moved since the last time
-- (consumers count deltas), PROGRESS_PER_TICK at a time: a round walks the
-- queue of those moved as it was when the round started, every progress_ns.
local function progress(self, now)
  local t = self.conns
  if t:walk_over(MOVED) then
    if now - self.last_progress_ns < self.progress_ns then
      return
    end
    t:start_walk(MOVED)
    self.last_progress_ns = now
  end
  for _ = 1, PROGRESS_PER_TICK do
    local slot = t:walk_next(MOVED)
    if not slot then
      return
    end
    local flags = t.flags[slot]
    if band(flags, MOVED) ~= 0 and t:in_use(slot) then
      t.flags[slot] = band(flags, bnot(MOVED))
      if not self.closing[slot] then
        progress_event(self, slot, now)
      end
    end
  end
end

-- A bounded part of the walk over every slot: connections the kernel no
-- longer follows (or, without opts.conn_open, idle past expire_ns) end as
-- closed (after SWEEP_CHECKS lookups the walk stops for the tick where it
-- is: it went on past them, and with more idle connections still open than
-- that in SWEEP_SLOTS slots, those after them were never looked up);
-- while shedding, those idle EVICT_IDLE_NS are evicted; those not reported
-- for REFRESH_NS get a progress event.
local function sweep(self, now)
  local t, conn_open = self.conns, self.opts.conn_open
  local checks, evicted = 0, 0
  for _ = 1, math.min(SWEEP_SLOTS, t.used) do
    local slot = self.cursor % t.used + 1
    local idle = now - t.last_ns[slot]
    local open = t:in_use(slot) and not self.closing[slot]
    if open and conn_open and idle > EXPIRE_CHECK_NS and checks == SWEEP_CHECKS then
      return -- the walk goes on from this slot next tick
    end
    self.cursor = slot
    if open then
      local gone = false
      if conn_open and idle > EXPIRE_CHECK_NS then
        checks = checks + 1
        gone = not conn_open(t.id[slot])
      elseif not conn_open and idle > self.expire_ns then
        gone = true
      end
      if gone then
        self.counts.expired = self.counts.expired + 1
        self.closing[slot] = { t.last_ns[slot], 0, 0, 0 }
        finish(self, slot, true)
      elseif self.shedding and idle >= EVICT_IDLE_NS and evicted < EVICT_PER_TICK then
        evicted = evicted + 1
        evict(self, slot)
      elseif now - t.reported_ns[slot] > REFRESH_NS then
        progress_event(self, slot, now)
      end
    end
  end
end

-- Against the memory budget: above LOW_WATER the collector runs without
-- pause and harder, with a bounded step each tick (so that garbage goes
-- even while little is allocated); from HIGH_WATER on, shedding, until
-- below LOW_WATER again, where the collector's settings are given back.
local function mind_memory(self)
  local limit = self.opts.memory_limit
  if not limit then
    return
  end
  local used = collectgarbage("count") * 1024
  if used < LOW_WATER * limit then
    if self.pressed then
      collectgarbage("setpause", self.pressed[1])
      collectgarbage("setstepmul", self.pressed[2])
      self.pressed = false
    end
    self.shedding = false
    return
  end
  if not self.pressed then
    self.pressed = { collectgarbage("setpause", GC_PAUSE), collectgarbage("setstepmul", GC_STEPMUL) }
  end
  collectgarbage("step", GC_STEP_KB)
  self.shedding = self.shedding or used >= HIGH_WATER * limit
end

-- Time passes (now: CLOCK_MONOTONIC ns); call it every 100-200 ms. drained:
-- the caller has fed every record it had (its queue is empty); without it,
-- a tick with no data since the last one says the same, if that one was at
-- most CLOSE_GRACE_NS ago. After a longer wait (a tracer's first tick, as
-- after a hot reload that held the agent's loop for its duration) the
-- caller had no turn to feed what was queued meanwhile: taken for caught
-- up, the tracer would end connections whose last records are still queued.
function _M:tick(now, drained)
  if drained then
    self.data_ns = math.max(self.data_ns, now)
  elseif self.data_ns == self.data_ns_at_tick and now - self.tick_ns <= CLOSE_GRACE_NS then
    self.data_ns = math.max(self.data_ns, now - CLOSE_GRACE_NS + CLOSE_SKEW_NS)
  end
  self.data_ns_at_tick, self.tick_ns = self.data_ns, now
  look_at_watched(self, now)
  progress(self, now)
  sweep(self, now)
  mind_memory(self)
end

return _M
