-- tables.lua - small helpers over plain Lua tables that several modules need.
local _M = {}

-- The keys of t in sorted order (by `less` when given, else by `<`).
function _M.sorted_keys(t, less)
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = k
  end
  table.sort(keys, less)
  return keys
end

-- The string keys of t in sorted order, leaving out the rest (a JSON
-- object's keys, not an array's indices).
function _M.sorted_string_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  return keys
end

return _M
