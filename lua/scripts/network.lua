-- network.lua - the bundled network script: the tracer's connection events
-- and HTTP exchanges as the Prometheus series coroot-node-agent exports
-- (container_net_tcp_*, container_http_*; see docs/network-metrics.md), with
-- their state handed to the next version at a hot reload, and the host's
-- cgroup layout, which the container ids are read from, logged once at
-- start. Replace it with a user script of the same name to change or turn
-- off these metrics.
local agent = require("moonrover.agent")
local container_id = require("moonrover.net.coroot_container")
local coroot_metrics = require("moonrover.net.coroot_metrics")

local state = agent.imported()
if not state and not agent.canary then
  local layout, line = container_id.host_layout()
  if layout then
    agent.log.info("cgroup layout: %s", line)
  else
    agent.log.warn("cgroup layout unknown: %s", line)
  end
end

local metrics = assert(coroot_metrics.new(agent, { state = state }))
agent.export(function()
  return metrics:export()
end)

agent.on("connection", function(batch)
  for ev in batch:each() do
    metrics:on_conn_event(ev)
  end
end)

agent.on("http", function(batch)
  for ex in batch:each() do
    metrics:on_exchange(ex)
  end
end)

agent.every(1, function()
  metrics:tick(agent.now() * 1e9)
end)
