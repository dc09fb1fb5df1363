-- profile_view.lua - turns a runtime profile (mr_profile, through the FFI)
-- into the plain Lua stacks the writers and the summary read:
-- { comm, pid, frames = {root .. leaf}, kinds = {...}, resolved = {...},
-- count, nanos }, and tid and thread (its name, "" when unknown) in
-- per-thread profiles. resolved[i] is true when frames[i] is a symbol's name,
-- false when it is an address ("module+0xoffset").
local C = require("moonrover.consts")
local rt = require("moonrover.rt")

local _M = {}

local KINDS = { [C.MR_FRAME_USER] = "user", [C.MR_FRAME_KERNEL] = "kernel", [C.MR_FRAME_JIT] = "jit",
  [C.MR_FRAME_UNKNOWN] = "unknown" }

-- A function from a profile's string ids to Lua strings, each copied once.
function _M.names(prof)
  local lib, ffi = rt.lib, rt.ffi
  local cache = {}
  return function(id)
    local s = cache[id]
    if not s then
      s = ffi.string(lib.mr_profile_string(prof, id))
      cache[id] = s
    end
    return s
  end
end

-- Every stack of prof, as a list of the tables above.
function _M.stacks(prof)
  local lib = rt.lib
  local name = _M.names(prof)
  local n = lib.mr_profile_sample_count(prof)
  local samples = lib.mr_profile_samples(prof)
  local stack = lib.mr_profile_stack_frames(prof)
  local frames = lib.mr_profile_frames(prof)
  local out = {}
  for i = 0, n - 1 do
    local s = samples[i]
    local names, kinds, resolved = {}, {}, {}
    for j = s.depth - 1, 0, -1 do
      local f = frames[stack[s.first + j]]
      names[#names + 1] = name(f.name)
      kinds[#kinds + 1] = KINDS[f.kind] or "unknown"
      resolved[#resolved + 1] = f.resolved ~= 0
    end
    out[#out + 1] = {
      comm = name(s.comm),
      pid = s.pid,
      tid = s.tid ~= 0 and s.tid or nil,
      thread = s.tid ~= 0 and name(s.thread) or nil,
      frames = names,
      kinds = kinds,
      resolved = resolved,
      count = tonumber(s.count),
      nanos = tonumber(s.nanos),
    }
  end
  return out
end

return _M
