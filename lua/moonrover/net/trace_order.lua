-- trace_order.lua - puts `moonrover trace`'s lines in time order before
-- they are written: exchanges complete in the order their responses end and
-- reach user space interleaved from every CPU's records, so the lines of
-- each flush (about a second's worth) are sorted by when their request
-- started, ties kept in arrival order. Pure: the caller writes.
local _M = {}
local mt = { __index = _M }

-- write(text): where a flush's lines go, in one call. The lines held and
-- their start times are two arrays, so that holding one allocates nothing.
function _M.new(write)
  return setmetatable({ write = write, starts = {}, lines = {}, n = 0 }, mt)
end

-- Holds line, which started at start_ns, until the next flush.
function _M:add(start_ns, line)
  local n = self.n + 1
  self.n, self.starts[n], self.lines[n] = n, start_ns, line
end

-- Writes every line held, in time order (ties in arrival order).
function _M:flush()
  local n, starts, lines = self.n, self.starts, self.lines
  if n == 0 then
    return
  end
  local order = {}
  for i = 1, n do
    order[i] = i
  end
  table.sort(order, function(a, b)
    if starts[a] ~= starts[b] then
      return starts[a] < starts[b]
    end
    return a < b
  end)
  for i = 1, n do
    order[i] = lines[order[i]]
  end
  for i = 1, n do
    lines[i] = nil
  end
  self.n = 0
  self.write(table.concat(order))
end

return _M
