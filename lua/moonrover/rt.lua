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

-- Calls a runtime function whose last two arguments are an error buffer and
-- its size; returns its result, or nil and the message it wrote.
function _M.call_with_err(fn, ...)
  local buf = ffi.new("char[512]")
  local args = { ... }
  local n = select("#", ...)
  args[n + 1] = buf
  args[n + 2] = 512
  local res = fn(unpack(args, 1, n + 2))
  if res == nil or (type(res) == "number" and res < 0) then
    return nil, ffi.string(buf)
  end
  return res
end

return _M
