-- proc_mapping.lua - ROVER_HOST_PROC_MAPPING (the host's /proc mounted
-- elsewhere) set and put back in this process's environment, for the specs
-- of what the runtime reads from /proc through it.
local ffi = require("ffi")

-- Only specs change the process's environment, so these are declared here
-- rather than in runtime/api.h; pcall: a spec may have declared them first.
pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")
pcall(ffi.cdef, "int unsetenv(const char *name);")

local _M = {}

local NAME = "ROVER_HOST_PROC_MAPPING"
-- The value before any spec changed it (nil: unset).
local saved = os.getenv(NAME)

-- Sets the mapping to path; nil unsets it.
function _M.set(path)
  if path then
    assert(ffi.C.setenv(NAME, path, 1) == 0, "setenv " .. NAME .. " failed")
  else
    assert(ffi.C.unsetenv(NAME) == 0, "unsetenv " .. NAME .. " failed")
  end
end

-- Puts back the value the environment had before the specs.
function _M.restore()
  _M.set(saved)
end

return _M
