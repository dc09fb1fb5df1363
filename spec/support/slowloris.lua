-- slowloris.lua - the Lua side of spec/support/slowloris.py, the slow HTTP
-- client of the endpoint's limit specs: where the script is, and the status
-- file it rewrites every second.
local files = require("support.files")

local _M = {}

_M.SCRIPT = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/slowloris.py"

-- The status it last wrote to path ("open", "opened", "closed", ... as
-- numbers); empty before the first one.
function _M.status(path)
  local st = {}
  for k, v in (files.read(path) or ""):gmatch("(%S+) (%-?%d+)") do
    st[k] = tonumber(v)
  end
  return st
end

return _M
