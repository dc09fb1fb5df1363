-- profile_builder.lua - builds runtime profiles (mr_profile, through
-- runtime/api_test.h) for specs: strings, modules, frames and samples.
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

local _M = {
  NONE = 0xffffffff, -- what the id functions below return when the runtime refuses
}

local out = ffi.new("uint32_t[1]")

local function id_or_none(ok)
  return ok and out[0] or _M.NONE
end

function _M.new()
  return ffi.gc(assert(rt.call(lib.mr_profile_new)), lib.mr_profile_free)
end

function _M.string(p, s)
  return id_or_none(rt.call(lib.mr_profile_string_add, p, s, out))
end

-- executable: whether it is the executable of some sampled process
function _M.module(p, path, build_id, executable)
  return id_or_none(rt.call(lib.mr_profile_module_add, p, path, build_id, executable and 1 or 0, out))
end

-- Adds a struct mr_frame as it is.
function _M.add_frame(p, f)
  return id_or_none(rt.call(lib.mr_profile_frame_add, p, f, out))
end

-- Adds a resolved frame named name.
function _M.frame(p, name, module, address, kind)
  local f = ffi.new("struct mr_frame")
  f.name = _M.string(p, name)
  f.module = module or 0
  f.address = address or 0
  f.kind = kind or lib.MR_FRAME_USER
  f.resolved = 1
  return _M.add_frame(p, f)
end

-- Adds to the sample of (pid, comm, frame ids leaf first); 0, or nil and
-- the runtime's message.
function _M.sample(p, pid, comm, ids, count, nanos)
  local frames = ffi.new("uint32_t[?]", math.max(#ids, 1), ids)
  return rt.call(lib.mr_profile_sample_add, p, pid, comm, frames, #ids, count, nanos)
end

-- The same for thread tid (named name) of the process, as a per-thread
-- profile holds it.
function _M.thread_sample(p, pid, comm, tid, name, ids, count, nanos)
  local frames = ffi.new("uint32_t[?]", math.max(#ids, 1), ids)
  local thread = ffi.new("struct mr_sample_thread", { tid = tid, name = name })
  return rt.call(lib.mr_profile_thread_sample_add, p, pid, comm, thread, frames, #ids, count, nanos)
end

return _M
