-- cgroup.lua - reads the text of /proc/PID/cgroup: its lines (cgroup v1
-- "N:controllers:/path", v2 "0::/path") and the container ids that container
-- runtimes write into cgroup paths. Both the Rover drop-in's container ids
-- (rover/container_id.lua) and the network metrics' (net/coroot_container.lua)
-- are built on it.
--
-- A path component names a container when it is, with <id> 64 hex digits:
--   docker-<id>.scope                  docker, systemd cgroup driver
--   /docker/<id>                       docker, cgroupfs driver
--   cri-containerd-<id>.scope          containerd, systemd driver
--   <slice>:cri-containerd:<id>        containerd, systemd driver, as kind shows it
--   crio-<id>.scope, crio-<id>         CRI-O, systemd and cgroupfs drivers
--   /kubepods.../<id>                  containerd, cgroupfs driver (dockershim made the
--                                      same form, but it left Kubernetes in 1.24)
--   libpod-<id>.scope                  podman
--   <id>                               anywhere else (runtime unknown: nil)
-- "crio-conmon-<id>.scope" and "libpod-conmon-<id>.scope" hold CRI-O's and
-- podman's monitor, which is not the container.
-- Ids are exactly 64 hex digits: docker, containerd and CRI-O all generate
-- 256-bit ids, while 32-digit names that look alike (systemd machine ids, ECS
-- task ids) are not containers.
local _M = {}

local ID = string.rep("%x", 64)

local WRAPPED = {
  { "^docker%-(" .. ID .. ")%.scope$", "docker" },
  { "^cri%-containerd%-(" .. ID .. ")%.scope$", "containerd" },
  { ":cri%-containerd:(" .. ID .. ")$", "containerd" },
  { "^crio%-(" .. ID .. ")%.scope$", "cri-o" },
  { "^crio%-(" .. ID .. ")$", "cri-o" },
  { "^libpod%-(" .. ID .. ")%.scope$", "podman" },
}

-- The components of a path ("/a//b/" -> { "a", "b" }).
function _M.split(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    parts[#parts + 1] = part
  end
  return parts
end

-- An absolute path with "." and ".." resolved and slashes collapsed, as the
-- kernel shows a cgroup outside the reader's cgroup namespace
-- ("/../../system.slice/x.service" -> "/system.slice/x.service").
function _M.clean(path)
  local out = {}
  for _, part in ipairs(_M.split(path)) do
    if part == ".." then
      out[#out] = nil
    elseif part ~= "." then
      out[#out + 1] = part
    end
  end
  return "/" .. table.concat(out, "/")
end

-- The lines of a /proc/PID/cgroup text, in order: { controllers = { "cpu",
-- "cpuacct" } ({ "" } on cgroup v2), path = "/..." as written }. Lines that are
-- not of that form are left out.
function _M.lines(text)
  local out = {}
  for line in (text or ""):gmatch("[^\n]+") do
    local controllers, path = line:match("^%d+:([^:]*):(.*)$")
    if path then
      local list = {}
      for c in (controllers .. ","):gmatch("([^,]*),") do
        list[#list + 1] = c
      end
      out[#out + 1] = { controllers = list, path = path }
    end
  end
  return out
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
  if part:find("^crio%-conmon%-") or part:find("^libpod%-conmon%-") then
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

-- The innermost container a cgroup path names, walking its components from
-- the last towards the root (which also covers a process in a sub-cgroup of
-- its container, ".../init"): id (lowercase) and runtime ("docker",
-- "containerd", "cri-o", "podman", or nil when unknown). false when the
-- path is CRI-O's or podman's monitor of a container; nil when it names no
-- container.
function _M.container(path)
  local parts = _M.split(path)
  for i = #parts, 1, -1 do
    local id, runtime = classify(parts, i)
    if id ~= nil then
      return id, runtime
    end
  end
  return nil
end

return _M
