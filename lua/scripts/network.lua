-- network.lua - the bundled network script: the tracer's connection events
-- and HTTP exchanges as the Prometheus series coroot-node-agent exports
-- (container_net_tcp_*, container_http_*; see docs/network-metrics.md), with
-- their state handed to the next version at a hot reload, and the host's
-- cgroup layout, which the container ids are read from, logged once at
-- start. With Kubernetes discovery, the containers of the node's pods are
-- named as coroot names them (/k8s/<namespace>/<pod>/<container>). Replace
-- it with a user script of the same name to change or turn off these
-- metrics.
local agent = require("moonrover.agent")
local container_id = require("moonrover.net.coroot_container")
local coroot_metrics = require("moonrover.net.coroot_metrics")
local exchange = require("moonrover.net.exchange")
local k8s = require("moonrover.k8s")
local kube_settings = require("moonrover.kube.agent_client").settings

local state = agent.imported()
if not state and not agent.canary then
  local layout, line = container_id.host_layout()
  if layout then
    agent.log.info("cgroup layout: %s", line)
  else
    agent.log.warn("cgroup layout unknown: %s", line)
  end
end

-- The pods' names, when the agent runs a Kubernetes client (it does
-- whenever the configuration makes discovery active: it does not start
-- without one).
local pod_names
if kube_settings(agent.config()).active then
  local index, why = k8s.index()
  if index then
    pod_names = container_id.pod_namer(index)
  else
    agent.log.warn("containers keep their runtime names: %s", why)
  end
end

-- The handlers below keep no exchange past their call: the tracer reuses
-- them (no allocation per exchange).
exchange.reuse()

local metrics = assert(coroot_metrics.new(agent, { state = state }))
agent.export(function()
  return metrics:export()
end)

agent.on("connection", function(batch)
  for ev in batch:each() do
    if pod_names then
      ev.container_id = pod_names:name(ev.container_id)
    end
    metrics:on_conn_event(ev)
  end
end)

agent.on("http", function(batch)
  for ex in batch:each() do
    if pod_names then
      ex.container_id = pod_names:name(ex.container_id)
    end
    metrics:on_exchange(ex)
  end
end)

agent.every(1, function()
  if pod_names then
    k8s.index()
  end
  metrics:tick(agent.now() * 1e9)
end)
