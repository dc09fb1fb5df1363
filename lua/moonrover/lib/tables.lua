-- tables.lua - small helpers over plain Lua tables that several modules need.
local _M = {}

-- The keys of t in sorted order. With only_strings, keys that are not
-- strings are left out (a JSON object's keys, an array's indices are not).
function _M.sorted_keys(t, only_strings)
  local keys = {}
  for k in pairs(t) do
    if not only_strings or type(k) == "string" then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  return keys
end

return _M
