-- output_file.lua - an output file written through the runtime (api.h,
-- mr_output_*): into an unnamed file in the target's directory (a temporary
-- file beside it where the file system has none), every write checked, put in
-- place over the target by commit(); "-" is standard output. A failure (a
-- full disk, a directory that went away) leaves the target as it was and is
-- returned by commit(), naming the target and the temporary file's directory;
-- a killed run leaves nothing. Writers use it like a Lua file: f:write(text).
local rt = require("moonrover.rt")

local _M = {}
local File = {}
File.__index = File

-- The file, or nil and why (the directory cannot be written, say).
function _M.open(path)
  local lib = rt.lib
  local handle, err = rt.call(lib.mr_output_open, path)
  if not handle then
    return nil, err
  end
  return setmetatable({ path = path, handle = rt.ffi.gc(handle, lib.mr_output_abort) }, File)
end

-- Writes text; a failure is kept for commit(). Returns the file.
function File:write(text)
  if self.handle and not self.err then
    local ok, err = rt.call(rt.lib.mr_output_write, self.handle, text, #text)
    self.err = not ok and err or nil
  end
  return self
end

local function take(self)
  local handle = self.handle
  self.handle = nil
  return rt.ffi.gc(handle, nil)
end

-- Finishes the file: true, or nil and the first error met writing it.
function File:commit()
  if not self.handle then
    return nil, "cannot write " .. self.path .. ": already finished"
  end
  local handle = take(self)
  if self.err then
    rt.lib.mr_output_abort(handle)
    return nil, self.err
  end
  local ok, err = rt.call(rt.lib.mr_output_commit, handle)
  return ok and true, err
end

-- Drops what was written.
function File:abort()
  if self.handle then
    rt.lib.mr_output_abort(take(self))
  end
end

return _M
