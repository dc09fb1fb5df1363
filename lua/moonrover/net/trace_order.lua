-- trace_order.lua - puts `moonrover trace`'s lines in time order before
-- they are written: exchanges complete in the order their responses end and
-- reach user space interleaved from every CPU's records, so the lines of
-- each flush (about a second's worth) are sorted by when their request
-- started, ties kept in arrival order. Pure: the caller writes.
local _M = {}
local mt = { __index = _M }

-- write(text): where a flush's lines go, in one call.
function _M.new(write)
  return setmetatable({ write = write, pending = {}, n = 0 }, mt)
end

-- Holds line, which started at start_ns, until the next flush.
function _M:add(start_ns, line)
  self.n = self.n + 1
  self.pending[self.n] = { start_ns, self.n, line }
end

local function earlier(a, b)
  if a[1] ~= b[1] then
    return a[1] < b[1]
  end
  return a[2] < b[2]
end

-- Writes every line held, in time order.
function _M:flush()
  if self.n == 0 then
    return
  end
  local pending = self.pending
  table.sort(pending, earlier)
  local lines = {}
  for i = 1, self.n do
    lines[i] = pending[i][3]
  end
  self.pending, self.n = {}, 0
  self.write(table.concat(lines))
end

return _M
