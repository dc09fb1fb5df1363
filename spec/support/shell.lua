-- shell.lua - running shell commands from specs.
local _M = {}

-- Runs cmd quietly; raises when it fails.
function _M.must(cmd)
  local status = os.execute(cmd .. " >/dev/null 2>&1")
  assert(status == 0 or status == true, "command failed: " .. cmd)
end

-- cmd's standard output (its errors are dropped).
function _M.capture(cmd)
  local f = assert(io.popen(cmd .. " 2>/dev/null", "r"))
  local out = f:read("*a")
  f:close()
  return out
end

return _M
