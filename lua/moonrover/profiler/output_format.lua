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

-- The main binary pprof names ("File:") of a whole-system profile, which has none.
_M.WHOLE_SYSTEM_FILE = "moonrover whole-system profile"

-- The name pprof gets for the main binary: the synthetic one unless a single
-- process is profiled (several may run different executables), nil to keep
-- that process's executable.
function _M.pprof_main_file(pids)
  if pids and #pids == 1 then
    return nil
  end
  return _M.WHOLE_SYSTEM_FILE
end

return _M
