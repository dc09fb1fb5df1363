-- kube_agent.lua - `moonrover agent` with a Kubernetes client, for e2e
-- specs of what the agent does with one (its moonrover_kube_* metrics, the
-- scripts' client.agent()): opens the client on the given API server,
-- checks the node, starts it, runs the agent with it in mr_agent_opts.kube,
-- and closes it after the agent returns, as the agent's caller must.
--   MOONROVER_LIB=build/libmoonrover.so luajit spec/support/kube_agent.lua \
--     SERVER CA_FILE TOKEN NODE agent [AGENT OPTIONS]
local source = os.getenv("MOONROVER_SOURCE_DIR") or "."
package.path = source .. "/lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") ..
  "/?.lua;" .. source .. "/spec/?.lua;" .. package.path
local args = require("moonrover.lib.args")
local agent_command = require("moonrover.commands.agent_command")
local client = require("moonrover.kube.client")
local read_file = require("support.files").read
local rt = require("moonrover.rt")

local server, ca, token, node, command = arg[1], arg[2], arg[3], arg[4], arg[5]
if command ~= "agent" then
  io.stderr:write("usage: kube_agent.lua SERVER CA_FILE TOKEN NODE agent [AGENT OPTIONS]\n")
  os.exit(2)
end
local feed, err = client.open({ server = server, ca_pem = read_file(ca), token = token, node_name = node })
local ok = feed and feed:check_node(5000)
if ok then
  ok, err = feed:start()
end
if not ok then
  io.stderr:write("kube_agent.lua: " .. tostring(err) .. "\n")
  os.exit(1)
end
local values, positional, given = args.parse(agent_command.options, { select(6, unpack(arg)) })
if not values or #positional > 0 then
  io.stderr:write("kube_agent.lua: " .. tostring(values and positional[1] or positional) .. "\n")
  os.exit(2)
end
local code = agent_command.run(values, given, function(c)
  c.kube = feed.k
  return rt.call(rt.lib.mr_agent_run, c)
end)
feed:close()
os.exit(code)
