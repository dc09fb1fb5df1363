-- fake_proc_facts.lua - the sys table of process discovery (rover/finder_facts.lua's
-- functions) over a table of fake processes, and the cgroup texts a pod's
-- container gives its processes, for unit specs of the Kubernetes finder.
--
--   local sys = fake_proc_facts.sys({ [100] = { cgroup = fake_proc_facts.cgroup_v2(id),
--     cmdline = "envoy -c x", comm = "envoy", exe = "/usr/local/bin/envoy", cwd = "/", start = 5e9 } })
-- symbols = false makes has_symbols false; pid 1 is the agent itself.
local _M = {}

-- containerd with the systemd driver, cgroup v2.
function _M.cgroup_v2(id)
  return "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice/cri-containerd-"
    .. id .. ".scope\n"
end

-- containerd with the cgroupfs driver, cgroup v1.
function _M.cgroup_v1(id)
  return "12:pids:/kubepods/besteffort/pod1f2e/" .. id .. "\n11:cpu,cpuacct:/kubepods/besteffort/pod1f2e/" .. id
    .. "\n"
end

function _M.sys(procs)
  local sys = {}
  local function proc(pid) return procs[pid] or {} end
  function sys.list_pids()
    local pids = {}
    for pid in pairs(procs) do
      pids[#pids + 1] = pid
    end
    table.sort(pids)
    return pids
  end
  function sys.read(pid, file) return proc(pid)[file] end
  function sys.exe(pid) return proc(pid).exe end
  function sys.cwd(pid) return proc(pid).cwd end
  function sys.start_ns(pid) return proc(pid).start or 0 end
  function sys.has_symbols(pid) return proc(pid).symbols ~= false end
  function sys.host_ip() return "10.0.0.7" end
  function sys.hostname() return "node-1" end
  function sys.self_pid() return 1 end
  function sys.host_ipv4(name) return name == "eth1" and "192.168.5.9" or nil end
  function sys.host_ipv6(name) return name == "eth0" and "fd00::7" or nil end
  return sys
end

return _M
