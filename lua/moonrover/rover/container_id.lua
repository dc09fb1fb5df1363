-- container_id.lua - finds the container a process runs in, as the Rover
-- drop-in reports it: the 64-hex-digit id the runtime gave it, from the text
-- of /proc/PID/cgroup as read from the host's cgroup namespace.
--
-- Each line's path is walked from its last component towards the root
-- (lib/cgroup.lua lists the forms recognised), as Rover takes the last
-- component of each line; the first line naming a container gives it.
-- CRI-O's conmon monitor is not a container (its line names none). Podman is reported with an
-- unknown runtime (nil), as Rover has no name for it.
local cgroup = require("moonrover.lib.cgroup")

local _M = {}

-- The container id of the process whose /proc/PID/cgroup is text, and its
-- runtime ("docker", "containerd", "cri-o" or nil when unknown); nil on the host.
function _M.from_cgroup(text)
  for _, line in ipairs(cgroup.lines(text)) do
    local id, runtime = cgroup.container(line.path)
    if id then
      return id, runtime ~= "podman" and runtime or nil
    end
  end
  return nil
end

return _M
