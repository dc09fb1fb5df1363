-- config_schema.lua - every key of the configuration file: its type, its
-- limits, its default, and whether moonrover acts on it. config.lua builds
-- the defaults from it and checks every loaded file against it, at every
-- depth. The keys are those of every Rover release from 0.3 on (0.3 to 0.5
-- had process_discovery.scanner, 0.6 and 0.7 access_log.protocol_analyze.
-- parallels, later ones parse_parallels and analyze_parallels) plus
-- moonrover's own `agent` section. Defaults are Rover's current ones, as the
-- text a YAML file would hold.
--
-- Nodes:
--   map(fields, opts)   a mapping that may have exactly these keys
--   list(item, opts)    a YAML list of item nodes
--   a scalar            { type = ..., default = "text", ... } made by the
--                       constructors below; type is one of string, bool,
--                       int, duration, size, enum, address, listen, layer, csv
-- Options of any node:
--   unused = "why"      the key is read and checked but moonrover does not act
--                       on it (a map passes it to its keys); a function of
--                       the value returns the reason or nil
--   check = fn          a map's checks across its keys, run on the merged
--                       configuration when nothing under the map is wrong
--                       already: fn(value, path, report, env), where
--                       report(path, value, expected) records a problem,
--                       env.bool(text) reads a boolean, and env.regex(pattern)
--                       / env.file(path) (absent in pure uses) compile a
--                       regular expression / read a file, each returning
--                       true or nil and why
-- Scalars also take min and max (numbers: seconds for durations, bytes for
-- sizes), nonempty (strings) and values (enum: the accepted words, compared
-- without regard to case).
local C = require("moonrover.consts")
local host_template = require("moonrover.rover.host_template")
local kube_template = require("moonrover.rover.kube_template")

local _M = {}

-- node's fields, then opts' (a key's limits and flags)
local function with_opts(node, opts)
  for k, v in pairs(opts or {}) do
    node[k] = v
  end
  return node
end

local function map(fields, opts)
  return with_opts({ type = "map", fields = fields }, opts)
end

local function list(item, opts)
  return with_opts({ type = "list", item = item }, opts)
end

local function scalar(kind, default, opts)
  return with_opts({ type = kind, default = default }, opts)
end

local function str(default, opts) return scalar("string", default, opts) end
local function bool(default, opts) return scalar("bool", default, opts) end
local function int(default, opts) return scalar("int", default, opts) end
local function duration(default, opts) return scalar("duration", default, opts) end
local function size(default, opts) return scalar("size", default, opts) end
local function csv(default, opts) return scalar("csv", default, opts) end
local function layer(default, opts) return scalar("layer", default, opts) end

local POSITIVE = { min = 0.001 } -- durations: at least 1ms
local AT_LEAST_ONE = { min = 1 }

-- Why keys are read and checked but not acted on (see docs/rover-compatibility.md).
local NETWORK_OWN_TRACER = "NETWORK tasks run on moonrover's network tracer, which has its own buffers "
  .. "(agent.network_payload) and keeps the parsed head of a message, not its body"
local NO_ACCESS_LOG = "no access log module yet"
local NO_PPROF = "no Go pprof server (moonrover serves /metrics and /healthz, see agent.http)"
local NO_AGENT_SENSOR = "no AGENT_SENSOR mode (metadata files of SkyWalking language agents)"

_M.LOG_LEVELS = { "trace", "debug", "info", "warn", "warning", "error", "fatal", "panic" }

-- ---------------------------------------------------------------- checks

-- A TLS connection reads its files when the Rover module starts; they are
-- checked here so that a missing one stops `start` instead of the module.
local function check_backend(b, path, report, env)
  if not env.bool(b.enable_tls) then
    return
  end
  local cert, key = b.client_pem_path or "", b.client_key_path or ""
  if (cert == "") ~= (key == "") then
    local missing = cert == "" and "client_pem_path" or "client_key_path"
    report(path .. "." .. missing, "", "a file: a client certificate needs both client_pem_path and "
      .. "client_key_path")
  end
  if not env.file then
    return
  end
  local skip = env.bool(b.insecure_skip_verify)
  for _, k in ipairs({ "ca_pem_path", "client_pem_path", "client_key_path" }) do
    local file = b[k] or ""
    if file ~= "" and not (k == "ca_pem_path" and skip) then
      local ok, why = env.file(file)
      if not ok then
        report(path .. "." .. k, file, "a readable PEM file with TLS on (" .. why .. ")")
      end
    end
  end
end

-- The mode the scanner runs in: REGEX unless AGENT_SENSOR is asked for (an
-- absent mode is moonrover's host mode, REGEX).
function _M.scanner_mode(scanner)
  local mode = scanner and scanner.mode
  return mode and mode:upper() == "AGENT_SENSOR" and "AGENT_SENSOR" or "REGEX"
end

local RULE_TEMPLATES = { "service_name", "instance_name", "process_name" }

local function check_rule(rule, at, report, env)
  if (rule.match_cmd or "") == "" then
    report(at .. ".match_cmd", rule.match_cmd, "a regular expression matching command lines (REGEX mode)")
  elseif env.regex then
    local ok, why = env.regex(rule.match_cmd)
    if not ok then
      report(at .. ".match_cmd", rule.match_cmd, "a POSIX extended regular expression (" .. tostring(why) .. ")")
    end
  end
  if (rule.service_name or "") == "" then
    report(at .. ".service_name", rule.service_name, "a service name or template (REGEX mode)")
  end
  for _, k in ipairs(RULE_TEMPLATES) do
    if rule[k] and rule[k] ~= "" then
      local ok, why = host_template.compile(rule[k])
      if not ok then
        report(at .. "." .. k, rule[k], "a naming template (" .. why .. ")")
      end
    end
  end
end

-- In REGEX mode every rule must be usable, as in Rover; in AGENT_SENSOR mode
-- Rover does not read the rules (its own files hold an empty one then).
local function check_scanner(scanner, path, report, env)
  if _M.scanner_mode(scanner) ~= "REGEX" then
    return
  end
  for i = 1, table.maxn(scanner.regex or {}) do
    check_rule(scanner.regex[i], string.format("%s.regex[%d]", path, i), report, env)
  end
end

-- Rover compiles every analyzer's templates at start, active or not, and
-- needs each filter and name: a broken one is named here, by its analyzer.
local function check_analyzer(a, at, report)
  for j = 1, table.maxn(a.filters or {}) do
    local f, where = a.filters[j], string.format("%s.filters[%d]", at, j)
    if (f or "") == "" then
      report(where, f, "a filter expression (Rover's, without braces)")
    else
      local ok, why = kube_template.compile(f, "filter")
      if not ok then
        report(where, f, "a filter expression (" .. why .. ")")
      end
    end
  end
  for _, k in ipairs(RULE_TEMPLATES) do
    if (a[k] or "") == "" then
      report(at .. "." .. k, a[k], "a naming template")
    else
      local ok, why = kube_template.compile(a[k], "name")
      if not ok then
        report(at .. "." .. k, a[k], "a naming template (" .. why .. ")")
      end
    end
  end
end

local function check_kubernetes(k, path, report)
  for i = 1, table.maxn(k.analyzers or {}) do
    check_analyzer(k.analyzers[i], string.format("%s.analyzers[%d]", path, i), report)
  end
end

-- ---------------------------------------------------------------- keys

local ISTIO_SERVICE_NAME = '{{.Pod.LabelValue "service.istio.io/canonical-name,app.kubernetes.io/name,app"'
  .. ' ""}}.{{.Pod.Namespace}}'

local function analyzer(filters, layer_name, service_name, labels)
  return { active = "true", filters = filters, layer = layer_name, service_name = service_name,
    instance_name = "{{.Pod.Name}}", process_name = "{{.Process.ExeName}}", labels = labels }
end

-- The default analyzers as plain tables; config.lua turns lists into YAML sequences.
local function default_analyzers()
  return {
    analyzer({ '.Pod.HasContainer "istio-proxy"', 'eq .Container.Name "istio-proxy"' }, "MESH_DP",
      ISTIO_SERVICE_NAME, "mesh-envoy"),
    analyzer({ '.Pod.HasContainer "istio-proxy"', 'ne .Container.Name "istio-proxy"' }, "MESH",
      ISTIO_SERVICE_NAME, "mesh-application"),
    analyzer({ ".Pod.HasServiceName" }, "K8S_SERVICE", "{{.Pod.ServiceName}}.{{.Pod.Namespace}}", "k8s-service"),
  }
end

local core = map({
  cluster_name = str(""),
  backend = map({
    addr = scalar("address", "localhost:11800"),
    enable_tls = bool("false"),
    client_pem_path = str(""),
    client_key_path = str(""),
    insecure_skip_verify = bool("false"),
    ca_pem_path = str(""),
    check_period = int("5", { min = 1, unused = "the connection to OAP is watched continuously" }),
    authentication = str(""),
  }, { check = check_backend }),
})

local regex_rule = map({
  match_cmd = str(nil),
  layer = layer(nil),
  service_name = str(nil),
  instance_name = str(nil),
  process_name = str(nil),
  labels = csv(nil),
})

local scanner = map({
  period = duration(nil, { min = 0.001, unused = "processes are scanned every heartbeat_period" }),
  mode = scalar("enum", nil, { values = { "AGENT_SENSOR", "REGEX" }, unused = function(mode)
    return mode:upper() == "AGENT_SENSOR" and NO_AGENT_SENSOR .. "; as in Rover, the regex rules are not used "
      .. "in this mode" or nil
  end }),
  agent = map({ process_status_refresh_period = duration(nil, POSITIVE) }, { unused = NO_AGENT_SENSOR }),
  regex = list(regex_rule),
}, { check = check_scanner })

local kubernetes = map({
  active = bool("true"),
  node_name = str(""),
  namespaces = csv(""),
  analyzers = list(map({
    active = bool(nil),
    filters = list(str(nil)),
    layer = layer(nil),
    service_name = str(nil),
    instance_name = str(nil),
    process_name = str(nil),
    labels = csv(nil),
  }), { default = default_analyzers }),
}, { check = check_kubernetes })

local process_discovery = map({
  heartbeat_period = duration("20s", { min = 1 }),
  properties_report_period = int("10", AT_LEAST_ONE),
  scanner = scanner,
  kubernetes = kubernetes,
})

local network = map({
  report_interval = duration("2s", POSITIVE),
  meter_prefix = str("rover_net_p", { nonempty = true }),
  protocol_analyze = map({
    per_cpu_buffer = size("400KB", AT_LEAST_ONE),
    parallels = int("2", AT_LEAST_ONE),
    queue_size = int("5000", AT_LEAST_ONE),
    sampling = map({
      http = map({
        default_request_encoding = str("UTF-8", { nonempty = true }),
        default_response_encoding = str("UTF-8", { nonempty = true }),
      }),
    }),
  }, { unused = NETWORK_OWN_TRACER }),
})

local continuous = map({
  meter_prefix = str("rover_con_p", { nonempty = true }),
  fetch_interval = duration("1s", POSITIVE),
  check_interval = duration("5s", POSITIVE),
  trigger = map({
    execute_duration = duration("10m", POSITIVE),
    silence_duration = duration("20m", POSITIVE),
  }),
})

local profiling = map({
  active = bool("true"),
  check_interval = duration("10s", { min = 1 }),
  flush_interval = duration("5s", { min = 1 }),
  task = map({
    on_cpu = map({ dump_period = duration("9ms", { min = 0.001, max = 1 }) }),
    network = network,
  }),
  continuous = continuous,
})

local function analyze(per_cpu_buffer, parallels, queue_size, extra)
  local fields = {
    per_cpu_buffer = size(per_cpu_buffer, AT_LEAST_ONE),
    parse_parallels = int(parallels, AT_LEAST_ONE),
    analyze_parallels = int(parallels, AT_LEAST_ONE),
    queue_size = int(queue_size, AT_LEAST_ONE),
  }
  for k, v in pairs(extra or {}) do
    fields[k] = v
  end
  return map(fields)
end

local access_log = map({
  active = bool("false"),
  exclude_namespaces = csv("istio-system,cert-manager,kube-system"),
  exclude_cluster = csv(""),
  flush = map({ max_count = int("10000", AT_LEAST_ONE), period = duration("5s", POSITIVE) }),
  connection_analyze = analyze("200KB", "1", "2000"),
  -- Rover 0.6 and 0.7 had one `parallels` here; later releases split it.
  protocol_analyze = analyze("400KB", "2", "5000", { parallels = int(nil, AT_LEAST_ONE) }),
}, { unused = NO_ACCESS_LOG })

-- moonrover's own section: the options of `moonrover agent` (same limits).
local agent = map({
  scripts = str(""),
  http = scalar("listen", "127.0.0.1:9464"),
  http_max_connections = int("64", { min = 1, max = 4096 }),
  http_timeout_ms = int("10000", { min = 100, max = 600000 }),
  pid_file = str("/run/moonrover.pid"),
  budget_ms = int("500", { min = 10, max = 60000 }),
  batch = int("4096", { min = 1, max = 65536 }),
  queue = int("65536", { min = 64, max = 16777216 }),
  network = bool("true"),
  network_payload = int(tostring(C.MR_NET_PAYLOAD_DEFAULT), { min = 64, max = C.MR_NET_PAYLOAD_MAX }),
  network_buffer = int("0", { min = 0, max = 1073741824 }),
})

-- The whole file: its top-level keys are its sections (Rover's modules).
_M.root = map({
  logger = map({ level = scalar("enum", "INFO", { values = _M.LOG_LEVELS }) }),
  core = core,
  process_discovery = process_discovery,
  profiling = profiling,
  access_log = access_log,
  pprof = map({
    active = bool("false"),
    port = int("6060", { min = 0, max = 65535 }),
  }, { unused = NO_PPROF }),
  agent = agent,
})

return _M
