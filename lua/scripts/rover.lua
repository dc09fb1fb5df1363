-- rover.lua (bundled) - the SkyWalking Rover drop-in: when the --config file
-- has a `core` section, reports this host's processes to OAP, runs the
-- profiling tasks OAP hands out and its continuous-profiling policies (see
-- docs/rover-compatibility.md).
local agent = require("moonrover.agent")
require("moonrover.rover.drop_in").run(agent)
