-- version_command.lua - `moonrover version`: the agent's version and what it was built with.
local rt = require("moonrover.rt")
local jit = require("jit")

local _M = {
  summary = "print the version and build information",
  usage = "moonrover version",
  options = {},
}

function _M.run()
  local lib, ffi = rt.lib, rt.ffi
  io.stdout:write(string.format("moonrover %s (%s, %s)\n", ffi.string(lib.mr_sys_version()),
    ffi.string(lib.mr_sys_build_info()), jit.version))
  return 0
end

return _M
