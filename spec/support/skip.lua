-- skip.lua - the one way a spec skips a case: busted's `it`, wrapped so that
-- where the case cannot run it is marked pending with the reason instead.
local _M = {}

-- it and pending are busted's; reason is why the cases cannot run here, or
-- nil when they can (then it is returned as it is).
function _M.guard(it, pending, reason)
  if not reason then
    return it
  end
  return function(name)
    it(name, function()
      pending(reason)
    end)
  end
end

return _M
