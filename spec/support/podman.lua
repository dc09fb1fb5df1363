-- podman.lua - running the image of scripts/image.sh in specs: the image,
-- built (or kept) once, and the podman flags that run a container on this
-- machine. Some machines need more than the defaults: crun refuses a hybrid
-- cgroup layout (runc runs there), and where the caller lacks
-- CAP_SYS_RESOURCE podman's default file and process limits, set above the
-- caller's, are refused (lower ones are not).
local e2e = require("support.e2e")
local package = require("support.debian_package")

local _M = {}

local CANDIDATES = {
  {},
  { "--runtime", "runc" },
  { "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024" },
  { "--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024" },
}

-- The image's name (scripts/image.sh prints it).
function _M.image()
  if not _M.built then
    _M.built = package.script("image.sh")
  end
  return _M.built
end

-- The flags of the first way of running a container that works here, or
-- nil and what podman said when none does (tried once).
function _M.flags()
  if _M.found == nil then
    _M.found = false
    for _, flags in ipairs(CANDIDATES) do
      local code, out, err = e2e.run("podman run --rm " .. table.concat(flags, " ") ..
        " --entrypoint /bin/true " .. e2e.quote(_M.image()))
      if code == 0 then
        _M.found = flags
        break
      end
      _M.said = (out .. err):gsub("%s+$", "")
    end
  end
  return _M.found or nil, _M.said
end

-- Runs the image with words as the agent's command line (after flags and
-- extra podman options); its exit code, stdout and stderr.
function _M.run(flags, options, words)
  local cmd = { "podman", "run", "--rm" }
  for _, list in ipairs({ flags, options }) do
    for _, w in ipairs(list) do
      cmd[#cmd + 1] = e2e.quote(w)
    end
  end
  cmd[#cmd + 1] = e2e.quote(_M.image())
  for _, w in ipairs(words) do
    cmd[#cmd + 1] = e2e.quote(w)
  end
  return e2e.run(table.concat(cmd, " "))
end

return _M
