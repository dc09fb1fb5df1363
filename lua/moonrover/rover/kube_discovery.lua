-- kube_discovery.lua - runs the Kubernetes finder (kube_finder.lua) in the
-- Rover drop-in: a pod index over the agent's Kubernetes client, a full scan
-- every 5 s as Rover's, and, so that a new pod's process is reported within
-- a second or two of its exec instead of at the next scan, a scan each
-- second of the processes that exec'd since (kept a few seconds more while
-- their container is not in the index yet: the kubelet writes a container's
-- id into the pod's status after starting it), and of those a full scan left
-- waiting for their pod's owners.
--
--   local kd, err = kube_discovery.new({ analyzers = ..., instance_id = ..., cluster_name = ... }, sys)
--   local ok, err = kd:start(agent, function() ... end)  -- called when the processes changed
--   kd:processes()                                        -- the pod processes found, as kube_finder's
local kube_finder = require("moonrover.rover.kube_finder")

local _M = {}
local mt = { __index = _M }

local FULL_SCAN_SECONDS = 5
local NEW_SCAN_SECONDS = 1
-- How many one-second scans a new process gets while its container is unknown.
local NEW_TRIES = 5

-- Compiles the analyzers (a configuration error is returned here, before
-- the agent starts anything); nothing is read until start().
function _M.new(cfg, sys)
  local finder, err = kube_finder.new(cfg, sys)
  if not finder then
    return nil, err
  end
  return setmetatable({ finder = finder, list = {}, new_pids = {}, analyzers = #(cfg.analyzers or {}) }, mt)
end

function _M:processes()
  return self.list
end

-- "3 analyzers in process_discovery.kubernetes", for the line saying what names processes.
function _M:naming_text()
  return string.format("%d analyzer%s in process_discovery.kubernetes", self.analyzers,
    self.analyzers == 1 and "" or "s")
end

local function log_problems(agent, problems)
  for _, p in ipairs(problems) do
    agent.log.warn("kubernetes process naming: %s", p)
  end
end

local function identity(p)
  return string.format("%d/%.0f", p.pid, p.start_ns or 0)
end

function _M:full_scan(agent)
  self.index:update()
  self.metrics.synced:set(self.index:synced() and 1 or 0)
  if not self.index:synced() then
    return false
  end
  local list, problems = self.finder:scan()
  log_problems(agent, problems)
  self.list = list
  for _, pid in ipairs(self.finder.pending_pids) do
    self.new_pids[pid] = self.new_pids[pid] or NEW_TRIES
  end
  self.metrics.matched:set(self.finder.matched)
  self.metrics.waiting:set(self.finder.pending)
  return true
end

-- Scans the processes that exec'd since the last call; true when some were found.
function _M:new_scan(agent)
  local pids = {}
  for pid in pairs(self.new_pids) do
    pids[#pids + 1] = pid
  end
  if #pids == 0 then
    return false
  end
  table.sort(pids)
  self.index:update()
  local found, problems, waiting = self.finder:scan(pids)
  log_problems(agent, problems)
  local again = {}
  for _, pid in ipairs(waiting) do
    again[pid] = true
  end
  for _, pid in ipairs(pids) do
    local tries = self.new_pids[pid] - 1
    self.new_pids[pid] = (again[pid] and tries > 0) and tries or nil
  end
  if #found == 0 then
    return false
  end
  local known = {}
  for _, p in ipairs(self.list) do
    known[identity(p)] = true
  end
  local grown = false
  for _, p in ipairs(found) do
    if not known[identity(p)] then
      self.list[#self.list + 1] = p
      grown = true
    end
  end
  return grown
end

-- Starts the scans over the agent's Kubernetes client; on_change() follows
-- each scan that may have changed processes(). false and why when the agent
-- has no Kubernetes client.
function _M:start(agent, on_change)
  local feed = require("moonrover.kube.client").agent()
  if not feed then
    return false, "the agent has no Kubernetes client"
  end
  self.index = require("moonrover.kube.pods").new(feed)
  self.finder.index = self.index
  self.metrics = {
    synced = agent.gauge("moonrover_rover_kube_synced", "1 once the pods of this node and the services have "
      .. "been listed from the Kubernetes API server, 0 before"),
    matched = agent.gauge("moonrover_rover_kube_processes_matched", "Processes of this node's pods that the "
      .. "Kubernetes analyzers named at the last scan"),
    waiting = agent.gauge("moonrover_rover_kube_processes_waiting", "Processes of this node's pods left for the "
      .. "next scan because their pod's owners are still being fetched"),
  }
  agent.on("process", function(batch)
    for ev in batch:each() do
      if ev.kind == agent.EXEC then
        self.new_pids[ev.pid] = NEW_TRIES
      end
    end
  end)
  local function full()
    if self:full_scan(agent) then
      on_change()
    end
  end
  agent.after(0.5, full)
  agent.every(FULL_SCAN_SECONDS, full)
  agent.every(NEW_SCAN_SECONDS, function()
    if self:new_scan(agent) then
      on_change()
    end
  end)
  return true
end

return _M
