-- tables.lua - table idioms the specs share: one field of every element of a
-- list, and a record made of defaults with some fields replaced.
local _M = {}

-- The list of list[i][field], in order.
function _M.pluck(list, field)
  local out = {}
  for i, item in ipairs(list) do
    out[i] = item[field]
  end
  return out
end

-- A new table with base's fields, then over's (over may be nil).
function _M.merged(base, over)
  local out = {}
  for k, v in pairs(base) do
    out[k] = v
  end
  for k, v in pairs(over or {}) do
    out[k] = v
  end
  return out
end

return _M
