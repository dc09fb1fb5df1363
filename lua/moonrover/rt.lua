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

-- In an agent script's state, every call into C is bracketed by the
-- runtime's leave / enter so that the time budget's interrupt never lands
-- inside C code (it may hold a lock, malloc's for one).
local function bracketed(clib, leave, enter)
  return setmetatable({}, {
    __index = function(t, name)
      local v = clib[name]
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
local raw = load_library()
ffi.cdef(ffi.string(raw.mr_api_cdef()))

-- clib (a library from ffi.load) as Lua code here may call it: bracketed in
-- an agent script's state, clib itself elsewhere.
function _M.guard(clib)
  if not package.loaded["moonrover.host"] then
    return clib
  end
  return bracketed(clib, raw.mr_lua_leave, raw.mr_lua_enter)
end

_M.lib = _M.guard(raw)
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
