-- network.lua - the bundled network script: the tracer's connection events
-- and HTTP exchanges as the Prometheus series coroot-node-agent exports
-- (container_net_tcp_*, container_http_*; see docs/network-metrics.md), with
-- their state handed to the next version at a hot reload. Replace it with a
-- user script of the same name to change or turn off these metrics.
local agent = require("moonrover.agent")
local coroot_metrics = require("moonrover.net.coroot_metrics")

local metrics = assert(coroot_metrics.new(agent, { state = agent.imported() }))
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
