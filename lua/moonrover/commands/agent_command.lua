-- agent_command.lua - `moonrover agent`: runs the bundled scripts (lua/scripts) and
-- the user's (--scripts DIR) on the agent's event streams until SIGTERM.
-- A user script with the same name as a bundled one replaces it.
local C = require("moonrover.consts")
local args = require("moonrover.lib.args")
local config = require("moonrover.config")
local kube_client = require("moonrover.kube.agent_client")
local rt = require("moonrover.rt")
local paths = require("moonrover.paths")

local _M = {
  summary = "run the agent: Lua scripts on live event streams, /metrics, hot reload",
  usage = "moonrover agent [--config FILE] [--scripts DIR] [--http ADDRESS] [--pid-file FILE] ...",
  description = "Runs the bundled scripts and the user's scripts, each in its own Lua state, on the\n" ..
    "agent's event streams. SIGHUP (or 'moonrover reload') reloads every script: the new\n" ..
    "versions are tried on a canary batch first and swapped in only if all succeed.\n" ..
    "SIGTERM or SIGINT stops the agent cleanly. With --config, settings come from a Rover-style\n" ..
    "rover_configs.yaml (${ENV:default} values; its `agent` section holds moonrover's own);\n" ..
    "options given on the command line win.",
}

local LEVELS = { "debug", "info", "warn", "error" }

_M.options = {
  { name = "config", short = "c", arg = "FILE",
    help = "read settings from a Rover-style config file (see configs/rover_configs.yaml)" },
  { name = "scripts", short = "s", arg = "DIR",
    help = "directory of your scripts (*.lua); a script named like a bundled one replaces it" },
  { name = "http", arg = "ADDRESS", default = "127.0.0.1:9464",
    help = "where to serve /metrics and /healthz ('off' disables)" },
  { name = "http-max-connections", arg = "N", default = 64, convert = args.int_range(1, 4096),
    help = "HTTP connections open at once; a new one closes another, the slowest sender first" },
  { name = "http-timeout-ms", arg = "MS", default = 10000, convert = args.int_range(100, 600000),
    help = "longest an HTTP request may take, from its first byte's wait to its answer sent" },
  { name = "pid-file", arg = "FILE", default = "/run/moonrover.pid",
    help = "where to write the agent's pid (used by 'moonrover reload'; 'off' disables)" },
  { name = "budget-ms", arg = "MS", default = 500, convert = args.int_range(10, 60000),
    help = "CPU time a Lua callback may use (or 10 times it elapsed) before its script is disabled" },
  { name = "batch", arg = "EVENTS", default = 4096, convert = args.int_range(1, 65536),
    help = "most events handed to one callback" },
  { name = "queue", arg = "EVENTS", default = 65536, convert = args.int_range(64, 16777216),
    help = "events buffered per stream while the scripts are busy (beyond: dropped and counted)" },
  { name = "network", arg = "on|off", default = "on", convert = args.one_of({ "on", "off" }),
    help = "trace TCP connections and HTTP exchanges (streams \"connection\", \"http\"; coroot's metrics)" },
  { name = "network-payload", arg = "BYTES", default = C.MR_NET_PAYLOAD_DEFAULT,
    convert = args.int_range(64, C.MR_NET_PAYLOAD_MAX),
    help = "bytes copied of each socket read or write for the parsers (requests' heads must fit)" },
  { name = "network-buffer", arg = "BYTES", default = 0, convert = args.int_range(0, 1073741824),
    help = "the kernel's ring of socket records (0: 512 KiB per possible CPU; resident twice over)" },
  { name = "log-level", arg = "LEVEL", default = "info", convert = args.one_of(LEVELS),
    help = "debug, info, warn or error" },
  { name = "script-memory", arg = "MIB", default = 128, convert = args.int_range(1, 65536),
    help = "most memory a script's Lua state may hold before it is stopped (agent.set_memory_budget overrides)" },
  { name = "strict",
    help = "refuse to start unless every script starts; all are compiled before any runs (by default broken "
      .. "scripts are skipped and reported)" },
  { name = "allow-unsafe-scripts",
    help = "run --scripts even from a directory or files others than root and the agent's user may write" },
}

local function off(v)
  return v == "off" and "" or v
end

local function level_number(name)
  for i, l in ipairs(LEVELS) do
    if l == name then
      return i - 1
    end
  end
end

-- Rover's logger levels (logrus) as moonrover's.
local ROVER_LEVELS = { trace = "debug", debug = "debug", info = "info", warn = "warn", warning = "warn",
  error = "error", fatal = "error", panic = "error" }

-- Where each option comes from in the config file, and how to read it.
local FROM_CONFIG = {
  { "scripts", "agent.scripts", config.get_string },
  { "http", "agent.http", config.get_string },
  { "http-max-connections", "agent.http_max_connections", config.get_int },
  { "http-timeout-ms", "agent.http_timeout_ms", config.get_int },
  { "pid-file", "agent.pid_file", config.get_string },
  { "budget-ms", "agent.budget_ms", config.get_int },
  { "batch", "agent.batch", config.get_int },
  { "queue", "agent.queue", config.get_int },
  { "network", "agent.network", config.get_bool },
  { "network-payload", "agent.network_payload", config.get_int },
  { "network-buffer", "agent.network_buffer", config.get_int },
}

-- Fills the options not given on the command line from the config file
-- (its text, read once by run). Returns values and the loaded config, or nil and every problem of
-- the file, one per line. The file's checks (config_schema.lua) give the
-- agent section the options' own limits and logger.level Rover's levels.
function _M.apply_config(values, given, path, text)
  local cfg, err = config.load_text(text, path, { checks = config.runtime_checks() })
  if not cfg then
    return nil, err
  end
  local from_file = assert(config.read_fields(cfg, FROM_CONFIG))
  for _, entry in ipairs(FROM_CONFIG) do
    local name, v = entry[1], from_file[entry[1]]
    if type(v) == "boolean" then
      v = v and "on" or "off"
    end
    if not given[name] and v ~= nil and v ~= "" then
      values[name] = v
    end
  end
  if not given["log-level"] then
    values["log-level"] = ROVER_LEVELS[config.get_string(cfg, "logger.level"):lower()]
  end
  return values, cfg
end

-- The bundled scripts that do not apply: the Rover drop-in (rover.lua) runs
-- only with a config file that has a `core` section, the network metrics
-- (network.lua) only with the network tracer.
local function bundled_skip(cfg, network)
  local skip = {}
  if not (cfg and config.has_section(cfg, "core")) then
    skip[#skip + 1] = "rover"
  end
  if not network then
    skip[#skip + 1] = "network"
  end
  return #skip > 0 and table.concat(skip, ",") or nil
end

-- cfg: the --config file, loaded, or nil.
function _M.opts_from(values, cfg)
  local lua_dir = paths.lua_dir()
  return {
    lua_dir = lua_dir,
    scripts_dir = lua_dir .. "/scripts",
    user_dir = values.scripts,
    http_address = off(values.http),
    http_max_connections = values["http-max-connections"],
    http_timeout_ms = values["http-timeout-ms"],
    pid_file = off(values["pid-file"]),
    budget_ms = values["budget-ms"],
    batch_max = values.batch,
    queue_capacity = values.queue,
    log_level = level_number(values["log-level"]),
    script_memory_mib = values["script-memory"],
    strict = values.strict and 1 or 0,
    unsafe_scripts = values["allow-unsafe-scripts"] and 1 or 0,
    bundled_skip = bundled_skip(cfg, values.network == "on"),
    network = values.network == "on" and 1 or 0,
    net_payload_bytes = values["network-payload"],
    net_ring_bytes = values["network-buffer"],
  }
end

-- Reads and checks the config file; its text and the loaded config, or nil
-- after saying every problem (nothing has been started then).
local function read_config(values, given)
  local text, err = config.read(values.config)
  local ok, cfg = text ~= nil, nil
  if ok then
    ok, err = _M.apply_config(values, given or {}, values.config, text)
    cfg = ok and err
  end
  if not ok then
    for line in (err .. "\n"):gmatch("([^\n]*)\n") do
      io.stderr:write("moonrover agent: " .. line .. "\n")
    end
    return nil
  end
  return text, cfg
end

-- Why the --scripts path cannot be the scripts directory, or nil when it can.
local function scripts_dir_problem(path)
  local dir = io.open(path .. "/.")
  if dir then
    dir:close()
    return nil
  end
  local file = io.open(path)
  if not file then
    return "the scripts directory " .. path .. " does not exist"
  end
  file:close()
  local parent = path:match("^(.*)/[^/]+/*$")
  return "--scripts: " .. path .. " is a file, not a directory; name the directory that holds your scripts"
    .. " (--scripts " .. (parent == nil and "." or parent == "" and "/" or parent) .. ")"
end

-- start(c) runs the agent with the struct mr_agent_opts c: true, or nil and
-- why (by default mr_agent_run; scripts/bench/agent_events.lua passes the
-- benchmark's).
local function run_agent(c)
  return rt.call(rt.lib.mr_agent_run, c)
end

function _M.run(values, given, start)
  local config_text, cfg
  if values.config then
    config_text, cfg = read_config(values, given)
    if not config_text then
      return 1
    end
  end
  local o = _M.opts_from(values, cfg)
  local bad = o.user_dir and scripts_dir_problem(o.user_dir)
  if bad then
    io.stderr:write("moonrover agent: " .. bad .. "\n")
    return 1
  end
  local kube, kube_err = kube_client.open(cfg)
  if kube == nil then
    io.stderr:write("moonrover agent: " .. kube_err .. "\n")
    return 1
  end
  local c = rt.ffi.new("struct mr_agent_opts")
  -- keep the strings alive for the whole run
  local keep = { o.lua_dir, o.scripts_dir, o.user_dir, o.http_address, o.pid_file, o.bundled_skip }
  c.lua_dir, c.scripts_dir, c.user_dir = keep[1], keep[2], keep[3]
  c.http_address, c.pid_file, c.bundled_skip = keep[4], keep[5], keep[6]
  c.budget_ms, c.batch_max, c.queue_capacity, c.log_level = o.budget_ms, o.batch_max, o.queue_capacity,
    o.log_level
  c.script_memory_mib, c.strict, c.unsafe_scripts = o.script_memory_mib, o.strict, o.unsafe_scripts
  c.http_max_connections, c.http_timeout_ms = o.http_max_connections, o.http_timeout_ms
  c.network, c.net_payload_bytes, c.net_ring_bytes = o.network, o.net_payload_bytes, o.net_ring_bytes
  if values.config then
    keep[7], keep[8] = config_text, values.config
    c.config_text, c.config_name = keep[7], keep[8]
  end
  if kube then
    c.kube = kube.k
  end
  local ok, err = (start or run_agent)(c)
  if kube then
    kube:close()
  end
  if not ok then
    io.stderr:write("moonrover agent: " .. err .. "\n")
    return 1
  end
  return 0
end

return _M
