-- config.lua - moonrover's configuration: Rover's rover_configs.yaml (same keys,
-- same ${ENV:default} overrides, case-insensitive keys) plus moonrover's own
-- `agent` section, merged over built-in defaults, and typed accessors that
-- convert the string values the way Rover's viper + mapstructure weak typing do.
--
-- Error style: no function here raises. load and every accessor return the
-- value, or nil and a message. An accessor returns its `default` argument when
-- the key is absent or null (so nil without a message means "absent, no
-- default"). Keys are dotted paths ("core.backend.addr"), matched without
-- regard to case; a number selects a list item ("...analyzers.1.layer").
local yaml = require("moonrover.lib.yaml")

local _M = {}

local KNOWN_SECTIONS = {
  agent = true, access_log = true, core = true, logger = true, pprof = true,
  process_discovery = true, profiling = true,
}

local KNOWN_LIST = "agent, access_log, core, logger, pprof, process_discovery, profiling"

-- the top-level sections each loaded config had in its file (weak keys)
local sections_of = setmetatable({}, { __mode = "k" })

local function seq(...)
  return setmetatable({ ... }, yaml.sequence)
end

local ISTIO_SERVICE_NAME = '{{.Pod.LabelValue "service.istio.io/canonical-name,app.kubernetes.io/name,app"'
  .. ' ""}}.{{.Pod.Namespace}}'

local function analyzer(filters, layer, service_name, labels)
  return {
    active = "true",
    filters = filters,
    layer = layer,
    service_name = service_name,
    instance_name = "{{.Pod.Name}}",
    process_name = "{{.Process.ExeName}}",
    labels = labels,
  }
end

local function process_discovery_defaults()
  return {
    heartbeat_period = "20s",
    properties_report_period = "10",
    kubernetes = {
      active = "true",
      node_name = "",
      namespaces = "",
      analyzers = seq(
        analyzer(seq('.Pod.HasContainer "istio-proxy"', 'eq .Container.Name "istio-proxy"'),
          "MESH_DP", ISTIO_SERVICE_NAME, "mesh-envoy"),
        analyzer(seq('.Pod.HasContainer "istio-proxy"', 'ne .Container.Name "istio-proxy"'),
          "MESH", ISTIO_SERVICE_NAME, "mesh-application"),
        analyzer(seq(".Pod.HasServiceName"),
          "K8S_SERVICE", "{{.Pod.ServiceName}}.{{.Pod.Namespace}}", "k8s-service")),
    },
  }
end

local function profiling_defaults()
  return {
    active = "true",
    check_interval = "10s",
    flush_interval = "5s",
    task = {
      on_cpu = { dump_period = "9ms" },
      network = {
        report_interval = "2s",
        meter_prefix = "rover_net_p",
        protocol_analyze = {
          per_cpu_buffer = "400KB",
          parallels = "2",
          queue_size = "5000",
          sampling = {
            http = { default_request_encoding = "UTF-8", default_response_encoding = "UTF-8" },
          },
        },
      },
    },
    continuous = {
      meter_prefix = "rover_con_p",
      fetch_interval = "1s",
      check_interval = "5s",
      trigger = { execute_duration = "10m", silence_duration = "20m" },
    },
  }
end

local function access_log_defaults()
  return {
    active = "false",
    exclude_namespaces = "istio-system,cert-manager,kube-system",
    exclude_cluster = "",
    flush = { max_count = "10000", period = "5s" },
    connection_analyze = {
      per_cpu_buffer = "200KB", parse_parallels = "1", analyze_parallels = "1", queue_size = "2000",
    },
    protocol_analyze = {
      per_cpu_buffer = "400KB", parse_parallels = "2", analyze_parallels = "2", queue_size = "5000",
    },
  }
end

-- A fresh table of every key with its built-in default, as the strings a YAML
-- file would hold (Rover's defaults, plus moonrover's `agent` section).
function _M.defaults()
  return {
    logger = { level = "INFO" },
    core = {
      cluster_name = "",
      backend = {
        addr = "localhost:11800",
        enable_tls = "false",
        client_pem_path = "",
        client_key_path = "",
        insecure_skip_verify = "false",
        ca_pem_path = "",
        check_period = "5",
        authentication = "",
      },
    },
    process_discovery = process_discovery_defaults(),
    profiling = profiling_defaults(),
    access_log = access_log_defaults(),
    pprof = { active = "false", port = "6060" },
    agent = {
      scripts = "",
      http = "127.0.0.1:9464",
      http_max_connections = "64",
      http_timeout_ms = "10000",
      pid_file = "/run/moonrover.pid",
      budget_ms = "500",
      batch = "4096",
      queue = "65536",
    },
  }
end

local function is_map(v)
  return type(v) == "table" and not yaml.is_sequence(v)
end

local function join(prefix, key)
  return prefix == "" and tostring(key) or prefix .. "." .. tostring(key)
end

-- Rover's override: a string that is entirely ${NAME:default} becomes the
-- variable's value when it is set and not empty, else the default (greedy up
-- to the last "}"; like Go's ".", the default cannot span a line break)
local function override(s, getenv)
  if s:find("\n", 1, true) then
    return s
  end
  local name, default = s:match("^%${([_A-Z0-9]+):(.*)}$")
  if not name then
    return s
  end
  local value = getenv(name)
  if value == nil or value == "" then
    return default
  end
  return value
end

local normalize

local function normalize_map(map, getenv, where)
  local out, seen = {}, {}
  for key, value in pairs(map) do
    local lower = key:lower()
    if seen[lower] then
      return nil, string.format('key "%s" is given twice (as "%s" and "%s"; keys are case-insensitive)',
        join(where, lower), seen[lower], key)
    end
    seen[lower] = key
    local v, err = normalize(value, getenv, join(where, lower))
    if err then
      return nil, err
    end
    out[lower] = v
  end
  return out
end

local function normalize_list(list, getenv, where)
  local out = setmetatable({}, yaml.sequence)
  for index, value in pairs(list) do
    local v, err = normalize(value, getenv, join(where, index))
    if err then
      return nil, err
    end
    out[index] = v
  end
  return out
end

-- a copy of a parsed value with keys lowercased and overrides applied to
-- every string at any depth
normalize = function(value, getenv, where)
  if type(value) == "string" then
    return override(value, getenv)
  elseif yaml.is_sequence(value) then
    return normalize_list(value, getenv, where)
  elseif type(value) == "table" then
    return normalize_map(value, getenv, where)
  end
  return value
end

-- nil, message naming the first top-level key that is not a known module
local function check_sections(doc, path)
  for key in pairs(doc) do
    if not KNOWN_SECTIONS[key] then
      return nil, string.format('unknown top-level key "%s" in %s (known: %s)', key, path,
        KNOWN_LIST)
    end
  end
  return true
end

-- deep merge of maps: values from `over` replace those in `base` (lists too)
local function merge(base, over, where)
  for key, value in pairs(over) do
    local current = base[key]
    if is_map(current) and is_map(value) then
      local ok, err = merge(current, value, join(where, key))
      if not ok then
        return nil, err
      end
    elseif is_map(current) then
      return nil, join(where, key) .. " must be a mapping"
    else
      base[key] = value
    end
  end
  return true
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then
    return nil, (err:gsub("^" .. path:gsub("%p", "%%%0") .. ": ", ""))
  end
  local text, rerr = f:read("*a")
  f:close()
  if not text then
    return nil, rerr
  end
  return text
end

-- the parsed file with keys lowercased, overrides applied and sections checked
local function prepare(doc, getenv, path)
  if doc == nil then
    return {}
  elseif not is_map(doc) then
    return nil, path .. ": the top level must be a mapping of modules"
  end
  local normalized, err = normalize(doc, getenv, "")
  if not normalized then
    return nil, path .. ": " .. err
  end
  local ok, serr = check_sections(normalized, path)
  if not ok then
    return nil, serr
  end
  return normalized
end

-- path: the YAML file; opts.getenv: the environment lookup (os.getenv by default).
-- Returns the configuration (defaults overlaid with the file) or nil, message.
function _M.load(path, opts)
  if type(path) ~= "string" then
    return nil, "cannot read the configuration: no file name given"
  end
  local text, rerr = read_file(path)
  if not text then
    return nil, string.format("cannot read %s: %s", path, tostring(rerr))
  end
  return _M.load_text(text, path, opts)
end

-- The same for text already read; path names it in messages.
function _M.load_text(text, path, opts)
  local getenv = opts and opts.getenv or os.getenv
  local doc, perr = yaml.parse(text, path)
  if perr then
    return nil, perr
  end
  local file, err = prepare(doc, getenv, path)
  if not file then
    return nil, err
  end
  local cfg = _M.defaults()
  local ok, merr = merge(cfg, file, "")
  if not ok then
    return nil, path .. ": " .. merr
  end
  local present = {}
  for key in pairs(file) do
    present[key] = true
  end
  sections_of[cfg] = present
  return cfg
end

-- true when the loaded file had the top-level section (a Rover module runs
-- only when its section is present; defaults alone do not start it)
function _M.has_section(cfg, name)
  local present = sections_of[cfg]
  return present ~= nil and present[name:lower()] == true
end

local function lookup(cfg, key)
  local node = cfg
  for part in key:gmatch("[^.]+") do
    if type(node) ~= "table" then
      return nil
    end
    if yaml.is_sequence(node) then
      node = node[tonumber(part)]
    else
      node = node[part:lower()]
    end
  end
  return node
end

-- Reads several typed values at once: fields is a list of { name, key,
-- accessor } (accessor: one of the get_ functions). Returns { name = value },
-- or nil and the first problem.
function _M.read_fields(cfg, fields)
  local out = {}
  for _, f in ipairs(fields) do
    local v, err = f[3](cfg, f[2])
    if err then
      return nil, err
    end
    out[f[1]] = v
  end
  return out
end

-- the raw value at key (a string, a list or a mapping), or default
function _M.get(cfg, key, default)
  local value = lookup(cfg, key)
  if value == nil then
    return default
  end
  return value
end

local function kind_of(value)
  return yaml.is_sequence(value) and "a list" or "a mapping"
end

-- the value at key as a string (numbers and booleans are converted); nil when
-- absent; nil, message for a list or mapping
local function scalar(cfg, key)
  local value = lookup(cfg, key)
  if type(value) == "table" then
    return nil, string.format("%s: expected a single value, found %s", key:lower(), kind_of(value))
  elseif value ~= nil then
    return tostring(value)
  end
end

local function bad_value(key, value, what)
  return nil, string.format('%s: "%s" is not %s', key:lower(), value, what)
end

-- applies convert(text) to the scalar at key; default when absent
local function typed(cfg, key, default, what, convert)
  local text, err = scalar(cfg, key)
  if err then
    return nil, err
  elseif text == nil then
    return default
  end
  local value = convert(text)
  if value == nil then
    return bad_value(key, text, what)
  end
  return value
end

function _M.get_string(cfg, key, default)
  local text, err = scalar(cfg, key)
  if err then
    return nil, err
  elseif text == nil then
    return default
  end
  return text
end

-- mapstructure decodes strings into bools with Go's strconv.ParseBool (1, t,
-- true, 0, f, false; here in any case) and "" as false
local BOOLS = { ["1"] = true, t = true, ["true"] = true, ["0"] = false, f = false, ["false"] = false,
  [""] = false }

function _M.get_bool(cfg, key, default)
  local text, err = scalar(cfg, key)
  if err then
    return nil, err
  elseif text == nil then
    return default
  end
  local value = BOOLS[text:lower()]
  if value == nil then
    return bad_value(key, text, "a boolean")
  end
  return value
end

local INT_PREFIXES = { x = 16, X = 16, o = 8, O = 8, b = 2, B = 2 }

local INT_DIGITS = { [2] = "^[01_]+$", [8] = "^[0-7_]+$", [10] = "^[0-9_]+$", [16] = "^[%x_]+$" }

local LARGEST_EXACT = 2 ^ 53 - 1

-- Go's strconv.ParseInt(s, 0, 64) as mapstructure uses it: optional sign,
-- 0x / 0o / 0b prefixes, a leading 0 for octal, "_" between digits; "" is 0.
-- Integers beyond 2^53 are refused since a Lua number cannot hold them exactly.
local function parse_int(s)
  if s == "" then
    return 0
  end
  local sign, body = s:match("^([+-]?)(.*)$")
  local base, digits = 10, body
  if body:sub(1, 1) == "0" and INT_PREFIXES[body:sub(2, 2)] then
    base, digits = INT_PREFIXES[body:sub(2, 2)], body:sub(3)
  elseif body:find("^0[0-9_]") then
    base, digits = 8, body:sub(2)
  end
  if not digits:find(INT_DIGITS[base]) or digits:find("__") or digits:find("_$")
    or (base == 10 and digits:find("^_")) then
    return nil
  end
  local n = tonumber((digits:gsub("_", "")), base)
  if not n or n > LARGEST_EXACT then
    return nil
  end
  return sign == "-" and -n or n
end

function _M.get_int(cfg, key, default)
  return typed(cfg, key, default, "an integer", parse_int)
end

-- seconds per unit of Go's time.ParseDuration
local DURATION_UNITS = {
  ns = 1e-9, us = 1e-6, ["\194\181s"] = 1e-6, ["\206\188s"] = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600,
}

-- Go's time.ParseDuration: a sign, then numbers (fractions allowed) each with a
-- unit ("1m30s", "1.5s", "500us"); "0" alone needs no unit. Returns seconds.
local function parse_duration(s)
  local sign, rest = s:match("^([+-]?)(.*)$")
  if rest == "0" then
    return 0
  elseif rest == "" then
    return nil
  end
  local total = 0
  while rest ~= "" do
    local number, unit, tail = rest:match("^([0-9]*%.?[0-9]*)([^0-9.]*)(.*)$")
    if number == "" or number == "." or not DURATION_UNITS[unit] then
      return nil
    end
    total = total + tonumber(number) * DURATION_UNITS[unit]
    rest = tail
  end
  return sign == "-" and -total or total
end

-- opts.plain_seconds: also accept a bare integer as a number of seconds
function _M.get_duration(cfg, key, default, opts)
  local plain = opts and opts.plain_seconds
  return typed(cfg, key, default, "a duration (like 20s, 9ms, 1m30s)", function(text)
    if plain and text:find("^%d+$") then
      return tonumber(text)
    end
    return parse_duration(text)
  end)
end

-- multipliers of docker/go-units RAMInBytes, which Rover uses for buffer
-- sizes: binary whatever the spelling, so KB = KiB = K = 1024 and MB = 1024^2
local SIZE_UNITS = { [""] = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3, t = 1024 ^ 4, p = 1024 ^ 5 }

-- RAMInBytes syntax: a number (with an optional fraction), one optional space,
-- then an optional unit letter, "i" and "b" ("400KB", "1MiB", "1.5 g", "512")
local function parse_size(s)
  local number = s:match("^%d+%.%d+") or s:match("^%d+")
  if not number then
    return nil
  end
  local unit = s:sub(#number + 1):match("^ ?([kKmMgGtTpP]?)[iI]?[bB]?$")
  if not unit then
    return nil
  end
  return math.floor(tonumber(number) * SIZE_UNITS[unit:lower()])
end

-- a size in bytes
function _M.get_size(cfg, key, default)
  return typed(cfg, key, default, "a size (like 400KB, 1MiB, 512)", parse_size)
end

local function split_commas(text)
  local list = {}
  for piece in (text .. ","):gmatch("([^,]*),") do
    local item = piece:match("^%s*(.-)%s*$")
    if item ~= "" then
      list[#list + 1] = item
    end
  end
  return list
end

-- a list of strings: a YAML list, or a comma-separated string (trimmed, empty
-- items dropped), as Rover's namespace keys take
function _M.get_list(cfg, key, default)
  local value = lookup(cfg, key)
  if value == nil then
    return default
  elseif type(value) ~= "table" then
    return split_commas(tostring(value))
  elseif not yaml.is_sequence(value) then
    return nil, key:lower() .. ": expected a list, found a mapping"
  end
  local list = {}
  for i = 1, table.maxn(value) do
    local item = value[i]
    if type(item) == "table" then
      return nil, string.format("%s: item %d is %s, not a single value", key:lower(), i, kind_of(item))
    end
    list[i] = item == nil and "" or tostring(item)
  end
  return list
end

return _M
