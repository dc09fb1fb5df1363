-- rt.lua - the one place Lua declares the runtime's FFI surface (runtime/api.h).
-- Inside the moonrover executable the runtime's symbols are global (ffi.C);
-- elsewhere (specs, tools) the shared library named by MOONROVER_LIB is loaded.
local ffi = require("ffi")

local _M = {}

local function load_library()
  local path = os.getenv("MOONROVER_LIB")
  if path and path ~= "" then
    return ffi.load(path, true)
  end
  return ffi.C
end

ffi.cdef("const char *mr_api_cdef(void);")
local lib = load_library()
ffi.cdef(ffi.string(lib.mr_api_cdef()))

_M.lib = lib
_M.ffi = ffi

return _M
