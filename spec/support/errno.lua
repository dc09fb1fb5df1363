-- errno.lua - the system's errno values by name (errno.ENOENT), as the C
-- compiler defines them in <errno.h>: specs compare a runtime's negative
-- errno with them instead of typing numbers.
local _M = {}

local values

local function load()
  local f = assert(io.popen("printf '#include <errno.h>\\n' | cc -E -dM -x c - 2>/dev/null", "r"))
  local text = f:read("*a")
  f:close()
  values = {}
  for name, v in text:gmatch("#define (E[%u%d]+) (%d+)") do
    values[name] = tonumber(v)
  end
end

setmetatable(_M, {
  __index = function(_, name)
    if not values then
      load()
    end
    return assert(values[name], "no errno named " .. tostring(name))
  end,
})

return _M
