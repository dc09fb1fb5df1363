-- list.lua - small operations on Lua arrays that more than one module needs.
local _M = {}

-- Takes the first element equal to item out of list (in place, keeping the
-- order of the others); does nothing when item is not there.
function _M.remove(list, item)
  for i, x in ipairs(list) do
    if x == item then
      table.remove(list, i)
      return
    end
  end
end

return _M
