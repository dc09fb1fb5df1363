-- output_format.lua - which profile format (folded, pprof, svg) a file is
-- written in: the one asked for (in any letter case), else the one its
-- name's extension says.
local args = require("moonrover.lib.args")

local _M = {}

_M.FORMATS = { "folded", "pprof", "svg" }

local known = args.one_of(_M.FORMATS)

local EXTENSIONS = {
  { "%.svg$", "svg" }, { "%.pb%.gz$", "pprof" }, { "%.pprof$", "pprof" }, { "%.pb$", "pprof" },
  { "%.folded$", "folded" }, { "%.collapsed$", "folded" }, { "%.txt$", "folded" },
}

-- The format, or nil and why. "-" (standard output) is folded unless asked.
function _M.for_path(path, format)
  if format then
    local f = known(tostring(format))
    if f then
      return f
    end
    return nil, "unknown profile format '" .. tostring(format) .. "' (formats: folded, pprof, svg)"
  end
  if path == "-" then
    return "folded"
  end
  for _, e in ipairs(EXTENSIONS) do
    if path:lower():match(e[1]) then
      return e[2]
    end
  end
  return nil, "cannot tell the format from the file name '" .. path .. "'"
end

return _M
