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

-- In an agent script's state, every runtime call is bracketed so that the
-- time budget's interrupt never lands inside C code (it may hold a lock).
local function bracketed(raw)
  local leave, enter = raw.mr_lua_leave, raw.mr_lua_enter
  return setmetatable({}, {
    __index = function(t, name)
      local v = raw[name]
      if type(v) ~= "cdata" then
        return v
      end
      local f = function(...)
        leave()
        local ok, r = pcall(v, ...)
        enter()
        if not ok then
          error(r, 2)
        end
        return r
      end
      rawset(t, name, f)
      return f
    end,
  })
end

ffi.cdef("const char *mr_api_cdef(void);")
local lib = load_library()
ffi.cdef(ffi.string(lib.mr_api_cdef()))
if package.loaded["moonrover.host"] then
  lib = bracketed(lib)
end

_M.lib = lib
_M.ffi = ffi

local ERRBUF = 512

-- Calls a runtime function whose last two parameters are an error buffer and
-- its size. Returns its result, or nil and the message when it returned NULL
-- or a negative number.
function _M.call_with_err(fn, ...)
  local buf = ffi.new("char[?]", ERRBUF)
  local n = select("#", ...)
  local argv = { ... }
  argv[n + 1], argv[n + 2] = buf, ERRBUF
  local res = fn(unpack(argv, 1, n + 2))
  if res == nil or (type(res) == "number" and res < 0) then
    return nil, ffi.string(buf)
  end
  return res
end

return _M
