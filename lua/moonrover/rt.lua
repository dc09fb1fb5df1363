-- rt.lua - the one place Lua declares the runtime's FFI surface (runtime/api.h)
-- and the one place a runtime failure becomes `nil, message`.
-- Inside the moonrover executable the runtime's symbols are global (ffi.C);
-- elsewhere (specs, tools) the shared library named by MOONROVER_LIB is loaded.
-- Nothing is loaded before rt.lib or rt.ffi is first used, so modules that
-- only require this one stay usable (and testable) without the runtime.
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
-- runtime's begin / end so that the time budget's interrupt never lands
-- inside C code (it may hold a lock, malloc's for one).
local function bracketed(clib, begin, finish)
  return setmetatable({}, {
    __index = function(t, name)
      local v = clib[name]
      if type(v) ~= "cdata" then
        rawset(t, name, v) -- a constant: looked up once
        return v
      end
      local f = function(...)
        begin()
        local ok, r = pcall(v, ...)
        finish()
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

local function in_script()
  return package.loaded["moonrover.script_context"] ~= nil
end

local raw

local function declare()
  ffi.cdef("const char *mr_api_cdef(void);")
  raw = load_library()
  ffi.cdef(ffi.string(raw.mr_api_cdef()))
  return in_script() and bracketed(raw, raw.mr_script_call_begin, raw.mr_script_call_end) or raw
end

-- rt.lib and rt.ffi: the first use of either declares the runtime's types
-- and loads its library.
setmetatable(_M, {
  __index = function(t, key)
    if key == "lib" or key == "ffi" then
      rawset(t, "lib", declare())
      rawset(t, "ffi", ffi)
      return rawget(t, key)
    end
  end,
})

-- The runtime functions a script may call without the bracket: pure scans
-- that read memory given to them and write only their output, and never
-- lock, allocate, block or fail, and the metric updates, which bracket
-- themselves and never lock, allocate or fail (api.h says so of each). The
-- bracket's cost, a pcall and varargs per call, keeps LuaJIT from compiling
-- the code around a call; these sit on the per-message path of the network
-- tracer and of the scripts fed by it.
local LOCK_FREE = { mr_http1_scan_head = true, mr_http1_scan_next = true, mr_http1_scan_line_end = true,
  mr_script_metric_add = true, mr_script_metric_set = true, mr_script_metric_observe = true }

-- rt.lock_free(name): the runtime function name, unbracketed; an error for a
-- name not in LOCK_FREE.
function _M.lock_free(name)
  if not LOCK_FREE[name] then
    error("rt.lock_free: " .. tostring(name) .. " is not a lock-free runtime function", 2)
  end
  local _ = _M.lib
  return raw[name]
end

-- clib (a library from ffi.load) as Lua code here may call it: bracketed in
-- an agent script's state, clib itself elsewhere (without loading the runtime).
function _M.guard(clib)
  if not in_script() then
    return clib
  end
  local _ = _M.lib
  return bracketed(clib, raw.mr_script_call_begin, raw.mr_script_call_end)
end

local test_api_declared = false

-- Whether this state declared runtime/api_test.h (with_test_api).
function _M.has_test_api()
  return test_api_declared
end

-- Declares runtime/api_test.h as well: the functions only specs and
-- benchmarks call. Returns this module.
function _M.with_test_api()
  if not test_api_declared then
    local lib = _M.lib
    ffi.cdef("const char *mr_api_test_cdef(void);")
    ffi.cdef(ffi.string(lib.mr_api_test_cdef()))
    test_api_declared = true
  end
  return _M
end

-- One message buffer per Lua state: Lua runs one call at a time.
local ERRLEN = 512
local errbuf = ffi.new("char[?]", ERRLEN)
local int64 = ffi.typeof("int64_t")

-- Callers by the number of arguments before the error buffer, so that
-- appending it needs no table (these calls sit on hot paths).
local CALLERS = {
  [0] = function(fn) return fn(errbuf, ERRLEN) end,
  function(fn, a) return fn(a, errbuf, ERRLEN) end,
  function(fn, a, b) return fn(a, b, errbuf, ERRLEN) end,
  function(fn, a, b, c) return fn(a, b, c, errbuf, ERRLEN) end,
  function(fn, a, b, c, d) return fn(a, b, c, d, errbuf, ERRLEN) end,
  function(fn, a, b, c, d, e) return fn(a, b, c, d, e, errbuf, ERRLEN) end,
  function(fn, a, b, c, d, e, f) return fn(a, b, c, d, e, f, errbuf, ERRLEN) end,
  function(fn, a, b, c, d, e, f, g) return fn(a, b, c, d, e, f, g, errbuf, ERRLEN) end,
  function(fn, a, b, c, d, e, f, g, h) return fn(a, b, c, d, e, f, g, h, errbuf, ERRLEN) end,
}

local function failed(res)
  if type(res) == "number" then
    return res < 0
  end
  return res == nil or (ffi.istype(int64, res) and res < 0)
end

-- Calls a runtime function whose last two parameters are an error buffer and
-- its size (the runtime's convention for everything that can fail). Returns
-- its result, or nil and the one-line message when it returned a negative
-- errno or NULL.
function _M.call(fn, ...)
  errbuf[0] = 0
  local res = CALLERS[select("#", ...)](fn, ...)
  if failed(res) then
    local msg = ffi.string(errbuf)
    return nil, msg ~= "" and msg or "the runtime reported a failure without saying why"
  end
  return res
end

return _M
