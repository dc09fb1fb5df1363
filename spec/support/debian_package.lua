-- debian_package.lua - the package specs' builds: the .deb (scripts/deb.sh)
-- and the fresh Debian root it is installed into (scripts/debian_root.sh),
-- both kept in the build directory so that a second run reuses them.
local e2e = require("support.e2e")

local _M = {}

local source = os.getenv("MOONROVER_SOURCE_DIR") or "."
local build = os.getenv("MOONROVER_BUILD_DIR") or "build"

-- Runs a script of scripts/ with BUILD_DIR set; its last line of output, or
-- raises with what it wrote.
local function script(name, arg_words)
  local words = { "BUILD_DIR=" .. e2e.quote(build), "bash", e2e.quote(source .. "/scripts/" .. name) }
  for _, w in ipairs(arg_words or {}) do
    words[#words + 1] = e2e.quote(w)
  end
  local code, out, err = e2e.run(table.concat(words, " "))
  assert(code == 0, name .. " failed (" .. code .. "):\n" .. out .. err)
  return out:match("([^\n]+)\n?$")
end
_M.script = script

-- The path of the built .deb.
function _M.deb()
  return script("deb.sh")
end

-- The path of a Debian root holding what deb depends on.
function _M.root(deb)
  return script("debian_root.sh", { deb, build .. "/debian-root" })
end

-- Runs command (a shell command line) in a throwaway copy of root with deb at
-- /tmp/NAME.deb; its exit code, stdout and stderr.
function _M.in_root(root, deb, command)
  return e2e.run(table.concat({ "sh", e2e.quote(source .. "/spec/support/debian_chroot.sh"), e2e.quote(root),
    e2e.quote(deb), "sh", "-c", e2e.quote(command) }, " "))
end

return _M
