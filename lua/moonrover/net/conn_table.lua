-- conn_table.lua - the tracer's connections, compact: each connection is a
-- slot (1, 2, ...) in columns, numbers in FFI arrays of plain C types and
-- strings and parser states in Lua arrays, so that one costs about 200
-- bytes of Lua memory instead of the 1.3-2.6 KB of a table per connection
-- (measured by spec/unit/net/tracer_memory_spec.lua). Slots are grown in
-- chunks (doubling up to CHUNK slots, then CHUNK more at a time, up to max:
-- no more than CHUNK slots unused, where doubling left up to half of them),
-- the Lua columns made exactly that size (table.new: an array grown by
-- assignment is a power of two), freed slots are reused (a free list), and
-- ids (socket cookies) find their slot through an open-addressing hash of
-- slots (int32 buckets, twice as many as slots, linear probing, deletion by
-- backward shift). A Lua table keyed by id cost 24 bytes a connection and,
-- full at 65,536 connections with one closing for each one opening, was
-- rehashed (2 ms) at nearly every insertion: calls of the storm spec ran
-- past their time budget there. Past max connections, each new one evicts
-- the least recently seen of a sample of slots (least_recent). The columns never hold nil: an empty string or
-- table is false, so the Lua arrays stay arrays.
--
-- Columns: by slot, id, last_ns (newest record), reported_ns (last progress
-- event), pid, tid, local_port, remote_port, role (C.MR_ROLE_*), proto (0:
-- not known yet, NO_PROTO: none, else the index of the tracer's protocol),
-- tries and looked (classification), last_dir (NO_DIR or a direction),
-- flags (below); by 2 * slot + direction, bytes, next (the next expected
-- offset, -1 before the first record) and skip_to (0: none asked); Lua
-- arrays local_addr, remote_addr, comm, container (false: not measured,
-- UNKNOWN: not known), pstate.
--
-- Queues: the slots flagged WATCHED, and those flagged MOVED, each in a
-- queue of its flag at most once (its QUEUED bit says it is in one), in
-- int32 arrays the size of the table (4 bytes a slot each, where a Lua list
-- or set of slots costs 8-24 bytes): mark() flags a slot and queues it, a
-- walk (start_walk, walk_next) takes the queue as it was when the walk
-- started and unqueues each slot it gives (which the walker marks again to
-- keep it); what is marked meanwhile waits for the next walk. A slot freed keeps its QUEUED bits: its entry in a
-- queue serves the connection that takes the slot next. The walks are the
-- tracer's (net/tracer.lua).
local bit = require("bit")
local ffi = require("ffi")
local new_table = require("table.new")

local band, bor, bnot, bxor, rshift, tobit = bit.band, bit.bor, bit.bnot, bit.bxor, bit.rshift, bit.tobit
local rehash -- (self), below

local _M = {}
local mt = { __index = _M }

_M.NO_PROTO = 255
_M.NO_DIR = 255
_M.UNKNOWN = 0 -- a container not known
-- flags
_M.HIDDEN = 1
_M.MOVED = 2 -- bytes moved since the last progress event
_M.EVICTED = 4
_M.WATCHED = 8 -- looked at every tick (its parser may have something pending)
local IN_USE = 64 -- the slot holds a connection
local QUEUED = { [_M.MOVED] = 16, [_M.WATCHED] = 32 }
local KEPT = QUEUED[_M.MOVED] + QUEUED[_M.WATCHED] -- the bits a freed slot keeps

local NUMBERS = { id = "double", last_ns = "double", reported_ns = "double", pid = "int32_t", tid = "int32_t",
  local_port = "int32_t", remote_port = "int32_t", role = "uint8_t", proto = "uint8_t", tries = "uint8_t",
  looked = "uint8_t", last_dir = "uint8_t", flags = "uint8_t" }
local PAIRS = { bytes = "double", next = "double", skip_to = "double" }
local STRINGS = { "local_addr", "remote_addr", "comm", "container", "pstate" }
local FIRST_CAPACITY = 256
local CHUNK = 4096

-- The first bucket to look in for id: from its low 32 bits (tobit keeps
-- them exactly below 2^51; cookies count up from 1).
local function home(id, mask)
  local lo = tobit(id)
  return band(bxor(lo, rshift(lo, 16)), mask)
end

local function insert(self, slot)
  local buckets, mask = self.buckets, self.mask
  local i = home(self.id[slot], mask)
  while buckets[i] ~= 0 do
    i = band(i + 1, mask)
  end
  buckets[i] = slot
end

-- New buckets, twice as many as slots (a power of two), filled with the
-- slots in use.
function rehash(self)
  local n = 512
  while n < 2 * self.capacity do
    n = 2 * n
  end
  self.buckets, self.mask = ffi.new("int32_t[?]", n), n - 1
  for slot = 1, self.used do
    if band(self.flags[slot], IN_USE) ~= 0 then
      insert(self, slot)
    end
  end
end

local function grow(self, capacity)
  local old = self.capacity
  for name, ctype in pairs(NUMBERS) do
    local col = ffi.new(ctype .. "[?]", capacity + 1)
    if self[name] then
      ffi.copy(col, self[name], ffi.sizeof(ctype) * (old + 1))
    end
    self[name] = col
  end
  for name, ctype in pairs(PAIRS) do
    local col = ffi.new(ctype .. "[?]", 2 * capacity + 2)
    if self[name] then
      ffi.copy(col, self[name], ffi.sizeof(ctype) * (2 * old + 2))
    end
    self[name] = col
  end
  for _, name in ipairs(STRINGS) do
    local col, old_col = new_table(capacity, 0), self[name]
    for slot = 1, old do
      col[slot] = old_col[slot]
    end
    for slot = old + 1, capacity do
      col[slot] = false
    end
    self[name] = col
  end
  for _, q in pairs(self.queues) do
    for _, name in ipairs({ "fill", "walk" }) do
      local list = ffi.new("int32_t[?]", capacity + 1)
      if q[name] then
        ffi.copy(list, q[name], 4 * (old + 1))
      end
      q[name] = list
    end
  end
  self.capacity = capacity
  rehash(self)
end

-- max: the most connections held.
function _M.new(max)
  local self = setmetatable({ max = max, count = 0, evicted = 0, capacity = 0, used = 0,
    free = {}, nfree = 0, cursor = 0, queues = {} }, mt)
  for flag, queued in pairs(QUEUED) do
    self.queues[flag] = { queued = queued, fill = false, walk = false, nfill = 0, nwalk = 0, at = 1 }
  end
  grow(self, math.min(FIRST_CAPACITY, max))
  return self
end

-- The slot of connection id, or nil.
-- (The probe past the first bucket is a function of its own: a loop
-- inlined in the callers' compiled traces costs them a trace exit.)
local function probe(buckets, mask, ids, id, i)
  while true do
    i = band(i + 1, mask)
    local slot = buckets[i]
    if slot == 0 then
      return nil
    end
    if ids[slot] == id then
      return slot
    end
  end
end

function _M:get(id)
  local buckets, mask, ids = self.buckets, self.mask, self.id
  local i = home(id, mask)
  local slot = buckets[i]
  if slot ~= 0 and ids[slot] == id then
    return slot
  end
  if slot == 0 then
    return nil
  end
  return probe(buckets, mask, ids, id, i)
end

-- Takes slot (in use) out of the buckets: the entries after it that would
-- not be found past the hole move back into it.
local function unhash(self, slot)
  local buckets, mask, ids = self.buckets, self.mask, self.id
  local i = home(ids[slot], mask)
  while buckets[i] ~= slot do
    i = band(i + 1, mask)
  end
  local j = i
  while true do
    j = band(j + 1, mask)
    local moved = buckets[j]
    if moved == 0 then
      break
    end
    -- moved stays unless its home lies cyclically in (i, j]
    local k = home(ids[moved], mask)
    if band(j - k, mask) >= band(j - i, mask) then
      buckets[i] = moved
      i = j
    end
  end
  buckets[i] = 0
end

local function take_slot(self)
  if self.nfree > 0 then
    local slot = self.free[self.nfree]
    self.free[self.nfree] = nil
    self.nfree = self.nfree - 1
    return slot
  end
  if self.used >= self.capacity then
    local capacity = self.capacity
    grow(self, math.min(self.max, capacity < CHUNK and 2 * capacity or capacity + CHUNK))
  end
  self.used = self.used + 1
  return self.used
end

-- The least recently seen of the next n slots in use from a cursor that
-- goes round the table (a sample, not a sort: bounded work however many
-- connections there are), or nil when none is in use.
function _M:least_recent(n)
  local best, used, last_ns = nil, self.used, self.last_ns
  for _ = 1, math.min(n, used) do
    local slot = self.cursor % used + 1
    self.cursor = slot
    if self:in_use(slot) and (not best or last_ns[slot] < last_ns[best]) then
      best = slot
    end
  end
  return best
end

-- A new entry for id seen at ts (nothing known yet, no bytes); its slot.
-- The caller makes room first when full() says so.
function _M:add(id, ts)
  local slot = take_slot(self)
  self.count = self.count + 1
  self.id[slot], self.last_ns[slot], self.reported_ns[slot] = id, ts, ts
  insert(self, slot)
  self.pid[slot], self.tid[slot], self.local_port[slot], self.remote_port[slot] = 0, 0, 0, 0
  self.role[slot], self.proto[slot], self.tries[slot], self.looked[slot] = 0, 0, 0, 0
  self.last_dir[slot], self.flags[slot] = _M.NO_DIR, bor(band(self.flags[slot], KEPT), IN_USE)
  local k = 2 * slot
  self.bytes[k], self.bytes[k + 1], self.next[k], self.next[k + 1] = 0, 0, -1, -1
  self.skip_to[k], self.skip_to[k + 1] = 0, 0
  self.local_addr[slot], self.remote_addr[slot], self.comm[slot] = false, false, false
  self.container[slot], self.pstate[slot] = _M.UNKNOWN, false
  return slot
end

function _M:full()
  return self.count >= self.max
end

function _M:remove(slot)
  if not self:in_use(slot) then
    return
  end
  unhash(self, slot)
  self.count = self.count - 1
  self.local_addr[slot], self.remote_addr[slot], self.comm[slot], self.pstate[slot] = false, false, false, false
  self.container[slot] = _M.UNKNOWN
  self.flags[slot] = band(self.flags[slot], KEPT)
  self.nfree = self.nfree + 1
  self.free[self.nfree] = slot
end

-- Whether slot holds a connection now.
function _M:in_use(slot)
  return slot <= self.used and band(self.flags[slot], IN_USE) ~= 0
end

-- Sets flag (MOVED or WATCHED) on slot and queues it for the next walk of
-- that flag, unless it is queued already.
function _M:mark(slot, flag)
  local q, flags = self.queues[flag], self.flags[slot]
  local queued = q.queued
  if band(flags, queued) == 0 then
    local n = q.nfill + 1
    q.nfill = n
    q.fill[n] = slot
  end
  self.flags[slot] = bor(flags, flag, queued)
end

-- Whether the walk of flag's queue is over (or none started).
function _M:walk_over(flag)
  local q = self.queues[flag]
  return q.at > q.nwalk
end

-- Starts a walk of flag's queue (the last one being over): what was queued
-- until now.
function _M:start_walk(flag)
  local q = self.queues[flag]
  q.fill, q.walk = q.walk, q.fill
  q.nwalk, q.nfill, q.at = q.nfill, 0, 1
end

-- The next slot of the walk of flag's queue, unqueued (nil: the walk is
-- over). It may be free now, or have lost the flag.
function _M:walk_next(flag)
  local q = self.queues[flag]
  local at = q.at
  if at > q.nwalk then
    return nil
  end
  q.at = at + 1
  local slot = q.walk[at]
  self.flags[slot] = band(self.flags[slot], bnot(q.queued))
  return slot
end

local function next_in_use(self, slot)
  for s = slot + 1, self.used do
    if band(self.flags[s], IN_USE) ~= 0 then
      return s, self.id[s]
    end
  end
end

-- For `for slot, id in table:each()`.
function _M:each()
  return next_in_use, self, 0
end

return _M
