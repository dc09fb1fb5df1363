-- rover_processes.lua - processes as the Rover drop-in's finder hands them
-- to the reporter, and OAP's answers about them, for specs.
local _M = {
  AGENT = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d",
}

function _M.process(pid, name, more)
  local p = {
    pid = pid,
    start_ns = pid * 1000,
    exe = "/usr/bin/" .. name,
    command_line = name .. " --serve",
    entity = { layer = "OS_LINUX", serviceName = name, instanceName = "10.0.0.7", processName = name,
      labels = { "a", "b" } },
    properties = { host_ip = "10.0.0.7", pid = tostring(pid), command_line = name .. " --serve",
      support_ebpf_profiling = "true" },
  }
  for k, v in pairs(more or {}) do
    p[k] = v
  end
  return p
end

-- OAP's answer echoing processes (labels in another order, as a set).
function _M.downstream(...)
  local out = {}
  for i, pair in ipairs({ ... }) do
    local p, id = pair[1], pair[2]
    local e = p.entity
    out[i] = { processId = id, hostProcess = { pid = p.pid, entityMetadata = { layer = e.layer,
      serviceName = e.serviceName, instanceName = e.instanceName, processName = e.processName,
      labels = { "b", "a" } } } }
  end
  return { processes = out }
end

return _M
