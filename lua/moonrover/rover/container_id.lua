-- container_id.lua - finds the container a process runs in from the text of
-- /proc/PID/cgroup (cgroup v1 "N:controllers:/path" lines and v2 "0::/path"),
-- as read from the host's cgroup namespace.
--
-- Each line's path is walked from its last component towards the root, as
-- Rover takes the last component of each line; walking further up
-- also covers processes in a sub-cgroup of their container (".../init").
-- A component names a container when it is, with <id> 64 hex digits:
--   docker-<id>.scope                  docker, systemd cgroup driver
--   /docker/<id>                       docker, cgroupfs driver
--   cri-containerd-<id>.scope          containerd, systemd driver
--   <slice>:cri-containerd:<id>        containerd, systemd driver, as kind shows it
--   crio-<id>.scope, crio-<id>         CRI-O, systemd and cgroupfs drivers
--   /kubepods.../<id>                  containerd, cgroupfs driver (dockershim made the
--                                      same form, but it left Kubernetes in 1.24)
--   libpod-<id>.scope                  podman (runtime unknown: nil)
--   <id>                               anywhere else (runtime unknown: nil)
-- "crio-conmon-<id>.scope" holds CRI-O's monitor, which is not the container:
-- the walk stops there. Ids are exactly 64 hex digits: docker, containerd and
-- CRI-O all generate 256-bit ids, while 32-digit names that look alike (systemd
-- machine ids, ECS task ids) are not containers.
local _M = {}

local ID = string.rep("%x", 64)

local WRAPPED = {
  { "^docker%-(" .. ID .. ")%.scope$", "docker" },
  { "^cri%-containerd%-(" .. ID .. ")%.scope$", "containerd" },
  { ":cri%-containerd:(" .. ID .. ")$", "containerd" },
  { "^crio%-(" .. ID .. ")%.scope$", "cri-o" },
  { "^crio%-(" .. ID .. ")$", "cri-o" },
  { "^libpod%-(" .. ID .. ")%.scope$", nil },
}

local function split_path(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    parts[#parts + 1] = part
  end
  return parts
end

-- The runtime of a bare id, from the components above it.
local function bare_runtime(parts, i)
  for j = i - 1, 1, -1 do
    if parts[j] == "docker" then
      return "docker"
    end
    if parts[j]:find("^kubepods") then
      return "containerd"
    end
  end
  return nil
end

-- id, runtime of component i; false to stop the walk; nil when not a container.
local function classify(parts, i)
  local part = parts[i]
  if part:find("^crio%-conmon%-") then
    return false
  end
  for _, w in ipairs(WRAPPED) do
    local id = part:match(w[1])
    if id then
      return id:lower(), w[2]
    end
  end
  if #part == 64 and part:find("^" .. ID .. "$") then
    return part:lower(), bare_runtime(parts, i)
  end
  return nil
end

local function from_path(path)
  local parts = split_path(path)
  for i = #parts, 1, -1 do
    local id, runtime = classify(parts, i)
    if id == false then
      return nil
    end
    if id then
      return id, runtime
    end
  end
  return nil
end

-- The container id of the process whose /proc/PID/cgroup is text, and its
-- runtime ("docker", "containerd", "cri-o" or nil when unknown); nil on the host.
function _M.from_cgroup(text)
  for line in (text or ""):gmatch("[^\n]+") do
    local path = line:match("^%d+:[^:]*:(.*)$")
    if path then
      local id, runtime = from_path(path)
      if id then
        return id, runtime
      end
    end
  end
  return nil
end

return _M
