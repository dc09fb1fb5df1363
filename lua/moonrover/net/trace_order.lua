-- trace_order.lua - puts `moonrover trace`'s lines in time order before
-- they are written: exchanges complete in the order their responses end and
-- reach user space interleaved from every CPU's records, so the lines of
-- each flush (about a second's worth) are sorted by when their request
-- started, ties kept in arrival order. Pure: the caller writes.
--
-- Cost (a flush can hold 150,000 lines): the lines are bytes in one FFI
-- buffer, written there by the caller (room, commit) or copied from a
-- string (add), never a Lua string each; the sort is of plain numbers
-- (each line's start, relative to the flush's earliest, times 2^20 plus its
-- arrival number), which table.sort compares without calling Lua: a
-- comparator function made sorting cost more than writing the lines. Only
-- a flush whose starts span more than 2^32 ns (4.3 s, as when a request
-- lasted that long), or of more than 2^20 lines, sorts with a comparator.
-- The buffers grow for a burst and shrink back after it. They hold at most
-- HOLD_MAX bytes of lines: a burst that fills them is written at once (a
-- flush before the second is over), so that a storm of exchanges costs
-- 4 MiB of lines, not the 16-32 MiB a second of them took.
local ffi = require("ffi")

local _M = {}
local mt = { __index = _M }

local INITIAL = 65536
local OUT_CHUNK = 1048576 -- bytes written at once: a flush of 50 MB as one string cost its page faults
local SEQ = 1048576 -- 2^20: arrival numbers in a key
local SPAN = 4294967296 -- 2^32: starts' span in a key (2^52 in all: exact in a double)
local HOLD_MAX = 4194304

local sort = table.sort
local copy = ffi.copy
local bytes_type = ffi.typeof("uint8_t[?]")

-- write(text): where a flush's lines go, in one call per OUT_CHUNK bytes;
-- hold: the most bytes of lines held (default HOLD_MAX).
function _M.new(write, hold)
  return setmetatable({ write = write, starts = {}, ends = {}, n = 0, buf = bytes_type(INITIAL), size = INITIAL,
    pos = 0, keys = {}, out = bytes_type(OUT_CHUNK), hold = hold or HOLD_MAX }, mt)
end

local function grow(self, need)
  local size = self.size
  while size < need do
    size = size * 2
  end
  local buf = bytes_type(size)
  copy(buf, self.buf, self.pos)
  self.buf, self.size = buf, size
end

-- Room for a line of at most bytes: the buffer and the index where it goes
-- (the lines held are written first when it would take them past hold).
-- The line written there is held by commit().
function _M:room(bytes)
  if self.n > 0 and self.pos + bytes > self.hold then
    self:flush()
  end
  local need = self.pos + bytes
  if need > self.size then
    grow(self, need)
  end
  return self.buf, self.pos
end

-- Holds the line written from the room's index up to stop, which started at start_ns.
function _M:commit(start_ns, stop)
  local n = self.n + 1
  self.n, self.starts[n], self.ends[n], self.pos = n, start_ns, stop, stop
end

-- Holds line (a string), which started at start_ns, until the next flush.
function _M:add(start_ns, line)
  local buf, at = self:room(#line)
  copy(buf + at, line, #line)
  self:commit(start_ns, at + #line)
end

-- The lines' numbers (1..n) in time order, ties in arrival order.
local function in_order(self)
  local n, starts, keys = self.n, self.starts, self.keys
  local low, high = starts[1], starts[1]
  for i = 2, n do
    local s = starts[i]
    low = s < low and s or low
    high = s > high and s or high
  end
  if n < SEQ and high - low < SPAN then
    for i = 1, n do
      keys[i] = (starts[i] - low) * SEQ + i
    end
    for i = n + 1, #keys do
      keys[i] = nil
    end
    sort(keys)
    for i = 1, n do
      keys[i] = keys[i] % SEQ
    end
    return keys
  end
  local order = {}
  for i = 1, n do
    order[i] = i
  end
  sort(order, function(a, b)
    if starts[a] ~= starts[b] then
      return starts[a] < starts[b]
    end
    return a < b
  end)
  return order
end

-- Writes every line held, in time order (ties in arrival order).
function _M:flush()
  local n = self.n
  if n == 0 then
    return
  end
  local order, ends, buf, write = in_order(self), self.ends, self.buf, self.write
  local out, at = self.out, 0
  for k = 1, n do
    local i = order[k]
    local from = i > 1 and ends[i - 1] or 0
    local len = ends[i] - from
    if at + len > OUT_CHUNK then
      write(ffi.string(out, at))
      at = 0
    end
    if len > OUT_CHUNK then
      write(ffi.string(buf + from, len))
    else
      copy(out + at, buf + from, len)
      at = at + len
    end
  end
  if at > 0 then
    write(ffi.string(out, at))
  end
  -- After a burst, a buffer four times larger than this flush needed shrinks by half.
  if self.size > INITIAL and self.pos * 4 < self.size then
    self.size = self.size / 2
    self.buf = bytes_type(self.size)
  end
  self.n, self.pos = 0, 0
end


return _M
