-- paths.lua - where the bundled Lua lives: the directory this module was
-- loaded from, so an installed copy and a source tree both find themselves.
local _M = {}

function _M.lua_dir()
  local source = debug.getinfo(1, "S").source
  local file = source:sub(1, 1) == "@" and source:sub(2) or source
  return (file:gsub("/moonrover/paths%.lua$", ""))
end

return _M
