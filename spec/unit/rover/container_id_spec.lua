-- Specs for container_id.from_cgroup with /proc/PID/cgroup texts as the host
-- sees them for each runtime, cgroup driver and cgroup version.
local container_id = require("moonrover.rover.container_id")

local ID = "3f7a1c2b9d8e4f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718"
local POD = "pod8d5b1e2a-6c7f-4b8e-9a0d-1f2e3c4d5b6a"
local POD_SLICE = "kubepods-burstable-pod8d5b1e2a_6c7f_4b8e_9a0d_1f2e3c4d5b6a.slice"

local function v1(path)
  return table.concat({
    "12:hugetlb:" .. path,
    "11:memory:" .. path,
    "10:cpu,cpuacct:" .. path,
    "9:pids:" .. path,
    "1:name=systemd:" .. path,
    "0::/",
  }, "\n") .. "\n"
end

local function v2(path)
  return "0::" .. path .. "\n"
end

local function check(text, id, runtime)
  local got, got_runtime = container_id.from_cgroup(text)
  assert.equal(id, got)
  assert.equal(runtime, got_runtime)
end

describe("container_id.from_cgroup", function()
  it("finds docker containers (cgroupfs v1, systemd v2)", function()
    check(v1("/docker/" .. ID), ID, "docker")
    check(v2("/system.slice/docker-" .. ID .. ".scope"), ID, "docker")
  end)

  it("finds containerd containers under Kubernetes (systemd and cgroupfs drivers)", function()
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/cri-containerd-" .. ID .. ".scope"),
      ID, "containerd")
    check(v1("/kubepods/burstable/" .. POD .. "/" .. ID), ID, "containerd")
    check(v1("/kubepods/besteffort/" .. POD .. "/" .. ID), ID, "containerd")
    check(v2("/system.slice/containerd.service/" .. POD_SLICE .. ":cri-containerd:" .. ID), ID, "containerd")
  end)

  it("finds CRI-O containers, but not CRI-O's conmon monitor", function()
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/crio-" .. ID .. ".scope"),
      ID, "cri-o")
    check(v1("/kubepods/burstable/" .. POD .. "/crio-" .. ID), ID, "cri-o")
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/crio-conmon-" .. ID .. ".scope"),
      nil, nil)
  end)

  it("finds a process in a sub-cgroup of its container", function()
    check(v2("/system.slice/docker-" .. ID .. ".scope/init"), ID, "docker")
  end)

  it("takes the innermost container when containers nest (kind)", function()
    local outer = string.rep("ab", 32)
    check(v2("/system.slice/docker-" .. outer .. ".scope/kubelet.slice/kubelet-kubepods.slice/"
      .. "kubelet-kubepods-besteffort.slice/cri-containerd-" .. ID .. ".scope"), ID, "containerd")
  end)

  it("finds podman and unknown runtimes by the id alone", function()
    check(v2("/machine.slice/libpod-" .. ID .. ".scope"), ID, nil)
    check(v2("/lxc.payload/" .. ID), ID, nil)
  end)

  it("lowercases ids", function()
    check(v2("/docker/" .. ID:upper()), ID, "docker")
  end)

  it("returns nil for host processes", function()
    check(v2("/init.scope"), nil, nil)
    check(v2("/system.slice/ssh.service"), nil, nil)
    check(v2("/system.slice/docker.service"), nil, nil)
    check(v2("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope"), nil, nil)
    check(v2("/user.slice/user-1000.slice/session-3.scope"), nil, nil)
    check(v1("/"), nil, nil)
    check("", nil, nil)
    check(nil, nil, nil)
  end)

  it("does not take shorter hex names for container ids", function()
    check(v2("/ecs/0123456789abcdef0123456789abcdef"), nil, nil)
    check(v2("/docker/" .. ID:sub(1, 63)), nil, nil)
  end)
end)
