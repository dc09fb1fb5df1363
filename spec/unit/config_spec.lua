-- Specs for configuration loading: Rover's override rule, case-insensitive
-- keys, every key checked at every depth with every problem reported at
-- once, merge over defaults, typed accessors, the shipped file and the files
-- of every Rover release. (Reading files is the runtime's: see
-- spec/integration/config_file_spec.lua.)
local config = require("moonrover.config")
local read = require("support.files").read
local yaml = require("moonrover.lib.yaml")

local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)spec/unit/[^/]*$") or "")
local SHIPPED = ROOT .. "configs/rover_configs.yaml"
local RELEASES = ROOT .. "spec/fixtures/rover_configs/"

local function env(vars)
  return { getenv = function(name) return vars[name] end }
end

local function load_text(text, vars, checks)
  local opts = env(vars or {})
  opts.checks = checks
  return config.load_text(text, "rover.yaml", opts)
end

local function load_ok(text, vars)
  local cfg, err = load_text(text, vars)
  assert.is_nil(err)
  return cfg
end

-- The problems load_text reports for text, as a list of lines.
local function problems(text, vars, checks)
  local cfg, err = load_text(text, vars, checks)
  assert.is_nil(cfg, "expected problems with:\n" .. text)
  local lines = {}
  for line in (err .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = line
  end
  return lines
end

-- The one problem of text.
local function problem(text, vars, checks)
  local lines = problems(text, vars, checks)
  assert.equal(1, #lines, table.concat(lines, "\n"))
  return lines[1]
end

-- every leaf of t as path -> value
local function leaves(t, prefix, out)
  out = out or {}
  for k, v in pairs(t) do
    local path = prefix and prefix .. "." .. k or tostring(k)
    if type(v) == "table" then
      leaves(v, path, out)
    else
      out[path] = v
    end
  end
  return out
end

describe("config.load_text", function()
  it("merges a partial file over the defaults", function()
    local cfg = load_ok("core:\n  backend:\n    addr: oap:11800\n")
    local expected = config.defaults()
    expected.core.backend.addr = "oap:11800"
    assert.same(expected, cfg)
  end)

  it("loads an empty file as the defaults", function()
    assert.same(config.defaults(), load_ok("# nothing here\n"))
  end)

  it("replaces lists instead of merging them", function()
    local cfg = load_ok("process_discovery:\n  kubernetes:\n    analyzers:\n      - layer: GENERAL\n"
      .. "        service_name: s\n        instance_name: i\n        process_name: p\n")
    assert.same({ { layer = "GENERAL", service_name = "s", instance_name = "i", process_name = "p" } },
      cfg.process_discovery.kubernetes.analyzers)
    assert.same("true", cfg.process_discovery.kubernetes.active)
  end)

  it("lowercases every key, in lists too", function()
    local cfg = load_ok("Core:\n  Backend:\n    enable_TLS: true\nprocess_discovery:\n  scanner:\n    regex:\n"
      .. "      - Match_Cmd: a\n        Service_Name: b\n")
    assert.same("true", cfg.core.backend.enable_tls)
    assert.is_nil(cfg.core.backend.enable_TLS)
    assert.same({ { match_cmd = "a", service_name = "b" } }, cfg.process_discovery.scanner.regex)
  end)

  it("rejects keys that differ only in case", function()
    assert.equal('rover.yaml: core.backend.enable_tls is given twice (as "enable_TLS" and "enable_tls"): '
      .. "expected one of them (keys are case-insensitive)",
      problem("core:\n  backend:\n    enable_TLS: true\n    enable_tls: false\n"))
  end)

  it("rejects an unknown top-level key, naming it, its value and the sections", function()
    assert.equal('rover.yaml: profilng: unknown key (its value: a mapping {active: true}); the top level has '
      .. "access_log, agent, core, logger, pprof, process_discovery, profiling", problem("profilng:\n  active: true\n"))
  end)

  it("rejects a single value where a section is expected", function()
    assert.equal('rover.yaml: core.backend is "oap:11800": expected a mapping with the keys addr, authentication, '
      .. "ca_pem_path, check_period, client_key_path, client_pem_path, enable_tls, insecure_skip_verify",
      problem("core:\n  backend: oap:11800\n"))
  end)

  it("rejects a top level that is not a mapping", function()
    assert.equal("rover.yaml: the top level is a list [a]: expected a mapping of sections (agent, access_log, core, "
      .. "logger, pprof, process_discovery, profiling)", problem("- a\n"))
  end)

  it("passes YAML errors through with the file and line", function()
    assert.equal('rover.yaml:3: duplicate key "a" (first at line 2)', problem("core:\n  a: 1\n  a: 2\n"))
  end)

  it("tells which sections the file had", function()
    local cfg = load_ok("logger:\n  level: DEBUG\nProfiling:\n  active: false\n")
    assert.is_true(config.has_section(cfg, "logger"))
    assert.is_true(config.has_section(cfg, "profiling"))
    assert.is_false(config.has_section(cfg, "access_log"))
    assert.is_false(config.has_section(config.defaults(), "logger"))
  end)
end)

describe("config.load_text environment overrides", function()
  it("uses the variable when set and not empty", function()
    local cfg = load_ok("core:\n  backend:\n    addr: ${ROVER_BACKEND_ADDR:localhost:11800}\n",
      { ROVER_BACKEND_ADDR = "oap.example:11800" })
    assert.same("oap.example:11800", config.get_string(cfg, "core.backend.addr"))
  end)

  it("uses the default when the variable is unset or empty", function()
    local text = "logger:\n  level: ${ROVER_LOGGER_LEVEL:INFO}\n"
    assert.same("INFO", load_ok(text).logger.level)
    assert.same("INFO", load_ok(text, { ROVER_LOGGER_LEVEL = "" }).logger.level)
    assert.same("", load_ok("core:\n  cluster_name: ${C:}\n").core.cluster_name)
  end)

  it("takes the default greedily up to the last brace", function()
    local cfg = load_ok("core:\n  cluster_name: ${T:{{.Pod.Name}}.{{.Pod.Namespace}}}\n")
    assert.same("{{.Pod.Name}}.{{.Pod.Namespace}}", cfg.core.cluster_name)
  end)

  it("leaves a value that only contains an override untouched", function()
    local cfg = load_ok("core:\n  cluster_name: x${A:b}\n", { A = "set" })
    assert.same("x${A:b}", cfg.core.cluster_name)
  end)

  it("refuses a value that starts like an override but is not one", function()
    local expected = "a value, or a whole ${NAME:default} override (NAME in capitals, digits and _; the default may "
      .. "be empty)"
    for _, text in ipairs({ "${ROVER_BACKEND_ADDR", "${a:b}", "${A}", "${A:b}y" }) do
      assert.equal(string.format('rover.yaml: core.backend.addr is "%s": expected %s', text, expected),
        problem("core:\n  backend:\n    addr: '" .. text .. "'\n", { A = "set", a = "set" }))
    end
  end)

  it("applies to strings inside lists and mappings in lists", function()
    local cfg = load_ok("process_discovery:\n  kubernetes:\n    analyzers:\n"
      .. "      - filters: [ '${A:x}', \"${C:true}\" ]\n"
      .. "        layer: ${B:GENERAL}\n        service_name: s\n        instance_name: i\n        process_name: p\n",
      { A = ".Pod.HasServiceName" })
    assert.same({ { filters = { ".Pod.HasServiceName", "true" }, layer = "GENERAL", service_name = "s",
      instance_name = "i", process_name = "p" } }, cfg.process_discovery.kubernetes.analyzers)
  end)

  it("looks variables up with os.getenv by default", function()
    local cfg = assert(config.load_text("agent:\n  scripts: ${HOME:none}\n", "rover.yaml"))
    assert.same(os.getenv("HOME") or "none", cfg.agent.scripts)
  end)
end)

describe("config.load_text checks every key", function()
  it("refuses the values of a broken core section that used to start without the Rover module", function()
    local cases = {
      { "process_discovery:\n  heartbeat_period: soon\n", 'process_discovery.heartbeat_period is "soon": '
        .. "expected a duration of at least 1s (such as 20s, 9ms or 1m30s)" },
      { "process_discovery:\n  heartbeat_period: 20 seconds\n", 'process_discovery.heartbeat_period is '
        .. '"20 seconds": expected a duration of at least 1s (such as 20s, 9ms or 1m30s)' },
      { "process_discovery:\n  heartbeat_period: -20s\n", 'process_discovery.heartbeat_period is "-20s": '
        .. "expected a duration of at least 1s (such as 20s, 9ms or 1m30s)" },
      { "process_discovery:\n  heartbeat_period: 0s\n", 'process_discovery.heartbeat_period is "0s": '
        .. "expected a duration of at least 1s (such as 20s, 9ms or 1m30s)" },
      { "profiling:\n  check_interval: -1s\n", 'profiling.check_interval is "-1s": expected a duration of at '
        .. "least 1s (such as 20s, 9ms or 1m30s)" },
      { "core:\n  backend:\n    enable_TLS: maybe\n", 'core.backend.enable_tls is "maybe": expected true or false' },
      { "core:\n  backend:\n    addr: [1,2]\n", "core.backend.addr is a list [1, 2]: expected host:port with a "
        .. "port from 1 to 65535 (a single value)" },
      { "process_discovery:\n  properties_report_period: 0\n", 'process_discovery.properties_report_period is '
        .. '"0": expected a whole number of at least 1' },
    }
    for _, case in ipairs(cases) do
      assert.equal("rover.yaml: " .. case[2], problem(case[1]))
    end
  end)

  it("refuses unknown keys and bad values at every depth", function()
    local cases = {
      { "core:\n  bogus_key: 1\n", 'core.bogus_key: unknown key (its value: "1"); core has backend, cluster_name' },
      { "access_log: {active: banana}\n", 'access_log.active is "banana": expected true or false' },
      { "pprof: {port: lots}\n", 'pprof.port is "lots": expected a whole number from 0 to 65535' },
      { "profiling:\n  continuous:\n    fetch_interval: never\n", 'profiling.continuous.fetch_interval is '
        .. '"never": expected a duration of at least 1ms (such as 20s, 9ms or 1m30s)' },
      { "access_log:\n  connection_analyze:\n    per_cpu_buffer: -200KB\n", "access_log.connection_analyze."
        .. 'per_cpu_buffer is "-200KB": expected a size of at least 1 byte (such as 400KB or 1MiB)' },
      { "profiling:\n  task:\n    on_cpu:\n      dump_period: -9ms\n", 'profiling.task.on_cpu.dump_period is '
        .. '"-9ms": expected a duration from 1ms to 1s (such as 20s, 9ms or 1m30s)' },
      { "profiling:\n  task:\n    on_cpu:\n      dump_period: 1ns\n", 'profiling.task.on_cpu.dump_period is '
        .. '"1ns": expected a duration from 1ms to 1s (such as 20s, 9ms or 1m30s)' },
      { "process_discovery:\n  scanner:\n    regex:\n      - match_cmd: java\n        service_name: s\n"
        .. "        sevice_name: t\n", 'process_discovery.scanner.regex[1].sevice_name: unknown key (its value: '
        .. '"t"); process_discovery.scanner.regex[1] has instance_name, labels, layer, match_cmd, process_name, '
        .. "service_name" },
      { "process_discovery:\n  kubernetes:\n    analyzers:\n      - filters: {a: b}\n", "process_discovery."
        .. "kubernetes.analyzers[1].filters is a mapping {a: b}: expected a list" },
      { "process_discovery:\n  scanner:\n    regex:\n      - match_cmd: java\n        service_name: s\n"
        .. "        layer: os_linux\n", 'process_discovery.scanner.regex[1].layer is "os_linux": expected an OAP '
        .. "layer name in capitals (such as OS_LINUX or GENERAL)" },
      { "agent:\n  budget_ms: 5\n", 'agent.budget_ms is "5": expected a whole number from 10 to 60000' },
      { "agent:\n  http: localhost\n", 'agent.http is "localhost": expected host:port (port 0: any free one), '
        .. "or off" },
      { "logger:\n  level: LOUD\n", 'logger.level is "LOUD": expected one of trace, debug, info, warn, warning, '
        .. "error, fatal, panic" },
    }
    for _, case in ipairs(cases) do
      assert.equal("rover.yaml: " .. case[2], problem(case[1]))
    end
  end)

  it("reports every problem at once, each on its own line", function()
    local lines = problems("core:\n  bogus_key: x\n  backend:\n    enable_TLS: maybe\n    addr: ${ROVER_BACKEND_ADDR\n"
      .. "access_log: {active: banana}\npprof: {port: lots}\nprofiling:\n  task:\n    on_cpu:\n"
      .. "      dump_period: 1ns\n")
    assert.equal(6, #lines)
    local keys = {}
    for i, line in ipairs(lines) do
      keys[i] = line:match("^rover%.yaml: ([%w_.]+)")
    end
    assert.same({ "access_log.active", "core.backend.addr", "core.backend.enable_tls", "core.bogus_key", "pprof.port",
      "profiling.task.on_cpu.dump_period" }, keys)
  end)

  it("lists the first problems of a hostile file and counts the rest", function()
    local text = { "agent:" }
    for i = 1, 1000 do
      text[#text + 1] = string.format("  k%d: v", i)
    end
    local lines = problems(table.concat(text, "\n") .. "\n")
    assert.equal(51, #lines)
    assert.equal("rover.yaml: ... and 950 more problem(s)", lines[51])
  end)

  it("shows a long value cut, with its length", function()
    local long = string.rep("x", 5000)
    assert.equal('rover.yaml: core.backend.addr is "' .. string.rep("x", 60) .. '..." (5000 bytes): expected '
      .. "host:port with a port from 1 to 65535", problem("core:\n  backend:\n    addr: " .. long .. "\n"))
  end)

  it("checks the scanner's rules in REGEX mode (the default), as Rover does", function()
    local checks = { regex = function(p)
      if p:find("(", 1, true) and not p:find(")", 1, true) then
        return nil, "parentheses not balanced"
      end
      return true
    end }
    local lines = problems("process_discovery:\n  scanner:\n    regex:\n      - match_cmd: ''\n"
      .. "      - match_cmd: 'java ('\n        service_name: s\n        process_name: '{{.Process.Nope}}'\n",
      nil, checks)
    assert.same({
      'rover.yaml: process_discovery.scanner.regex[1].match_cmd is "": expected a regular expression matching '
        .. "command lines (REGEX mode)",
      "rover.yaml: process_discovery.scanner.regex[1].service_name is missing: expected a service name or template "
        .. "(REGEX mode)",
      'rover.yaml: process_discovery.scanner.regex[2].match_cmd is "java (": expected a POSIX extended regular '
        .. "expression (parentheses not balanced)",
      'rover.yaml: process_discovery.scanner.regex[2].process_name is "{{.Process.Nope}}": expected a naming '
        .. "template (1:3: unknown field .Process.Nope)",
    }, lines)
  end)

  it("compiles every Kubernetes analyzer's filters and names, naming the analyzer", function()
    local lines = problems("process_discovery:\n  kubernetes:\n    analyzers:\n"
      .. "      - active: false\n        filters: ['eq .Container.Nam \"x\"', '']\n        layer: MESH\n"
      .. "        service_name: '{{.Pod.ServiceName}}'\n        instance_name: '{{.Pod.HasServiceName}}'\n"
      .. "        process_name: ''\n")
    assert.same({
      'rover.yaml: process_discovery.kubernetes.analyzers[1].filters[1] is "eq .Container.Nam \\"x\\"": expected a '
        .. "filter expression (1:6: unknown field .Container.Nam)",
      'rover.yaml: process_discovery.kubernetes.analyzers[1].filters[2] is "": expected a filter expression '
        .. "(Rover's, without braces)",
      'rover.yaml: process_discovery.kubernetes.analyzers[1].instance_name is "{{.Pod.HasServiceName}}": expected a '
        .. "naming template (1:3: unknown field .Pod.HasServiceName)",
      'rover.yaml: process_discovery.kubernetes.analyzers[1].process_name is "": expected a naming template',
    }, lines)
  end)

  it("leaves the rules alone in AGENT_SENSOR mode, where Rover does not read them", function()
    assert.is_truthy(load_ok("process_discovery:\n  scanner:\n    mode: AGENT_SENSOR\n    regex:\n"
      .. "      - match_cmd: ''\n        service_name: ''\n"))
  end)

  it("checks TLS files only with TLS on, and asks for certificate and key together", function()
    local asked = {}
    local checks = { file = function(path)
      asked[#asked + 1] = path
      return path == "/ok.pem" or nil, "No such file or directory"
    end }
    assert.is_truthy(load_text("core:\n  backend:\n    ca_pem_path: /missing.pem\n", nil, checks))
    assert.same({}, asked)
    assert.same({
      'rover.yaml: core.backend.client_key_path is "": expected a file: a client certificate needs both '
        .. "client_pem_path and client_key_path",
      'rover.yaml: core.backend.ca_pem_path is "/missing.pem": expected a readable PEM file with TLS on (No such '
        .. "file or directory)",
    }, problems("core:\n  backend:\n    enable_TLS: true\n    ca_pem_path: /missing.pem\n"
      .. "    client_pem_path: /ok.pem\n", nil, checks))
    assert.is_truthy(load_text("core:\n  backend:\n    enable_TLS: true\n    insecure_skip_verify: true\n"
      .. "    ca_pem_path: /missing.pem\n", nil, checks))
  end)
end)

describe("the configs/rover_configs.yaml of every Rover release", function()
  local RELEASE_NOTICES = {
    ["0.3"] = { "core.backend.check_period", "process_discovery.scanner.agent.process_status_refresh_period",
      "process_discovery.scanner.mode", "process_discovery.scanner.period" },
    ["0.6"] = { "access_log", "core.backend.check_period", "profiling.task.network.protocol_analyze" },
    ["main"] = { "access_log", "core.backend.check_period", "pprof", "profiling.task.network.protocol_analyze" },
  }
  RELEASE_NOTICES["0.4"] = { "core.backend.check_period",
    "process_discovery.scanner.agent.process_status_refresh_period",
    "process_discovery.scanner.mode", "process_discovery.scanner.period", "profiling.task.network.protocol_analyze" }
  RELEASE_NOTICES["0.5"] = { "core.backend.check_period",
    "process_discovery.scanner.agent.process_status_refresh_period", "process_discovery.scanner.mode",
    "process_discovery.scanner.period", "profiling.task.network.protocol_analyze" }
  RELEASE_NOTICES["0.7"] = RELEASE_NOTICES["main"]

  for _, release in ipairs({ "0.3", "0.4", "0.5", "0.6", "0.7", "main" }) do
    it("loads Rover " .. release .. "'s file, with one notice per group of keys moonrover does not act on", function()
      local path = RELEASES .. "rover-" .. release .. ".yaml"
      local cfg, err = config.load_text(assert(read(path)), path, env({}))
      assert.is_nil(err)
      local subjects = {}
      for i, notice in ipairs(config.notices(cfg)) do
        assert.matches(" read and checked but not acted on: ", notice, 1, true)
        assert.not_matches("\n", notice)
        subjects[i] = notice:match("^([%w_.]+)")
      end
      assert.same(RELEASE_NOTICES[release], subjects)
    end)
  end

  it("names every key not acted on in its notice", function()
    local cfg = assert(config.load_text(assert(read(RELEASES .. "rover-0.7.yaml")), "rover-0.7.yaml", env({})))
    assert.same("access_log: active, exclude_cluster, exclude_namespaces, flush.max_count, flush.period, "
      .. "protocol_analyze.parallels, protocol_analyze.per_cpu_buffer, protocol_analyze.queue_size are read and "
      .. "checked but not acted on: no access log module yet", config.notices(cfg)[1])
  end)

  it("takes Rover 0.5's scanner in REGEX mode from the environment, rules checked", function()
    local path = RELEASES .. "rover-0.5.yaml"
    local cfg = assert(config.load_text(assert(read(path)), path, env({
      ROVER_PROCESS_DISCOVERY_SCAN_MODE = "REGEX",
      ROVER_PROCESS_DISCOVERY_REGEX_SCANNER_MATCH_CMD = "java .*orders",
      ROVER_PROCESS_DISCOVERY_REGEX_SCANNER_SERVICE_NAME = "orders" })))
    assert.same("java .*orders", config.get_string(cfg, "process_discovery.scanner.regex.1.match_cmd"))
    local _, err = config.load_text(assert(read(path)), path, env({ ROVER_PROCESS_DISCOVERY_SCAN_MODE = "REGEX" }))
    assert.matches("regex%[1%]%.match_cmd is \"\": expected a regular expression", err)
  end)
end)

describe("the shipped configs/rover_configs.yaml", function()
  it("equals the built-in defaults when no variable is set", function()
    local cfg, err = config.load_text(assert(read(SHIPPED)), SHIPPED, env({}))
    assert.is_nil(err)
    assert.same(config.defaults(), cfg)
    assert.equal(4, #config.notices(cfg))
  end)

  it("takes an override of one key from the environment", function()
    local cfg = assert(config.load_text(assert(read(SHIPPED)), SHIPPED, env({ ROVER_BACKEND_ADDR = "oap:11800" })))
    local expected = config.defaults()
    expected.core.backend.addr = "oap:11800"
    assert.same(expected, cfg)
  end)

  it("makes every value overridable by Rover's variable names", function()
    -- the variable each value names, by lowercased key path
    local named = {}
    for path, value in pairs(leaves(assert(yaml.parse(assert(read(SHIPPED)))))) do
      named[path:lower()] = "$" .. (value:match("^%${([_A-Z0-9]+):.*}$") or "(no variable) " .. value)
    end
    local P = "process_discovery.kubernetes.analyzers."
    local A = "ROVER_PROCESS_DISCOVERY_KUBERNETES_ANALYZER_"
    local expected = {
      ["logger.level"] = "ROVER_LOGGER_LEVEL",
      ["core.cluster_name"] = "ROVER_CORE_CLUSTER_NAME",
      ["core.backend.addr"] = "ROVER_BACKEND_ADDR",
      ["core.backend.enable_tls"] = "ROVER_BACKEND_ENABLE_TLS",
      ["core.backend.client_pem_path"] = "ROVER_BACKEND_PEM_PATH",
      ["core.backend.client_key_path"] = "ROVER_BACKEND_KEY_PATH",
      ["core.backend.insecure_skip_verify"] = "ROVER_BACKEND_INSECURE_SKIP_VERIFY",
      ["core.backend.ca_pem_path"] = "ROVER_BACKEND_CA_PEM_PATH",
      ["core.backend.check_period"] = "ROVER_BACKEND_CHECK_PERIOD",
      ["core.backend.authentication"] = "ROVER_BACKEND_AUTHENTICATION",
      ["process_discovery.heartbeat_period"] = "ROVER_PROCESS_DISCOVERY_HEARTBEAT_PERIOD",
      ["process_discovery.properties_report_period"] = "ROVER_PROCESS_DISCOVERY_PROPERTIES_REPORT_PERIOD",
      ["process_discovery.kubernetes.active"] = "ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE",
      ["process_discovery.kubernetes.node_name"] = "ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME",
      ["process_discovery.kubernetes.namespaces"] = "ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES",
      [P .. "1.active"] = A .. "ISTIO_ENVOY_ACTIVE",
      [P .. "1.filters.1"] = A .. "ISTIO_ENVOY_HAS_ENVOY",
      [P .. "1.filters.2"] = A .. "ISTIO_ENVOY_CONTAINER_IS_ENVOY",
      [P .. "1.layer"] = A .. "ISTIO_ENVOY_LAYER",
      [P .. "1.service_name"] = A .. "ISTIO_ENVOY_SERVICE_NAME",
      [P .. "1.instance_name"] = A .. "ISTIO_ENVOY_INSTANCE_NAME",
      [P .. "1.process_name"] = A .. "ISTIO_ENVOY_PROCESS_NAME",
      [P .. "1.labels"] = A .. "ISTIO_ENVOY_LABELS",
      [P .. "2.active"] = A .. "ISTIO_APPLICATION_ACTIVE",
      [P .. "2.filters.1"] = A .. "ISTIO_APPLICATION_HAS_ENVOY",
      [P .. "2.filters.2"] = A .. "ISTIO_APPLICATION_CONTAINER_NOT_ENVOY",
      [P .. "2.layer"] = A .. "ISTIO_APPLICATION_LAYER",
      [P .. "2.service_name"] = A .. "ISTIO_APPLICATION_SERVICE_NAME",
      [P .. "2.instance_name"] = A .. "ISTIO_APPLICATION_INSTANCE_NAME",
      [P .. "2.process_name"] = A .. "ISTIO_APPLICATION_PROCESS_NAME",
      [P .. "2.labels"] = A .. "ISTIO_APPLICATION_LABELS",
      [P .. "3.active"] = A .. "K8S_SERVICE_ACTIVE",
      [P .. "3.filters.1"] = A .. "K8S_SERVICE_HAS_SERVICE",
      [P .. "3.layer"] = A .. "K8S_SERVICE_LAYER",
      [P .. "3.service_name"] = A .. "K8S_SERVICE_NAME",
      [P .. "3.instance_name"] = A .. "K8S_SERVICE_INSTANCE_NAME",
      [P .. "3.process_name"] = A .. "K8S_SERVICE_PROCESS_NAME",
      [P .. "3.labels"] = A .. "K8S_SERVICE_LABLES",
      ["profiling.active"] = "ROVER_PROFILING_ACTIVE",
      ["profiling.check_interval"] = "ROVER_PROFILING_CHECK_INTERVAL",
      ["profiling.flush_interval"] = "ROVER_PROFILING_FLUSH_INTERVAL",
      ["profiling.task.on_cpu.dump_period"] = "ROVER_PROFILING_TASK_ON_CPU_DUMP_PERIOD",
      ["profiling.task.network.report_interval"] = "ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL",
      ["profiling.task.network.meter_prefix"] = "ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_METER_PREFIX",
      ["profiling.task.network.protocol_analyze.per_cpu_buffer"] =
        "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_PER_CPU_BUFFER",
      ["profiling.task.network.protocol_analyze.parallels"] =
        "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_PARALLELS",
      ["profiling.task.network.protocol_analyze.queue_size"] =
        "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_QUEUE_SIZE",
      ["profiling.task.network.protocol_analyze.sampling.http.default_request_encoding"] =
        "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_SAMPLING_HTTP_DEFAULT_REQUEST_ENCODING",
      ["profiling.task.network.protocol_analyze.sampling.http.default_response_encoding"] =
        "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_SAMPLING_HTTP_DEFAULT_RESPONSE_ENCODING",
      ["profiling.continuous.meter_prefix"] = "ROVER_PROFILING_CONTINUOUS_METER_PREFIX",
      ["profiling.continuous.fetch_interval"] = "ROVER_PROFILING_CONTINUOUS_FETCH_INTERVAL",
      ["profiling.continuous.check_interval"] = "ROVER_PROFILING_CONTINUOUS_CHECK_INTERVAL",
      ["profiling.continuous.trigger.execute_duration"] =
        "ROVER_PROFILING_CONTINUOUS_TRIGGER_EXECUTE_DURATION",
      ["profiling.continuous.trigger.silence_duration"] =
        "ROVER_PROFILING_CONTINUOUS_TRIGGER_SILENCE_DURATION",
      ["access_log.active"] = "ROVER_ACCESS_LOG_ACTIVE",
      ["access_log.exclude_namespaces"] = "ROVER_ACCESS_LOG_EXCLUDE_NAMESPACES",
      ["access_log.exclude_cluster"] = "ROVER_ACCESS_LOG_EXCLUDE_CLUSTER",
      ["access_log.flush.max_count"] = "ROVER_ACCESS_LOG_FLUSH_MAX_COUNT",
      ["access_log.flush.period"] = "ROVER_ACCESS_LOG_FLUSH_PERIOD",
      ["access_log.connection_analyze.per_cpu_buffer"] = "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PER_CPU_BUFFER",
      ["access_log.connection_analyze.parse_parallels"] =
        "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PARSE_PARALLELS",
      ["access_log.connection_analyze.analyze_parallels"] = "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PARALLELS",
      ["access_log.connection_analyze.queue_size"] = "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_QUEUE_SIZE",
      ["access_log.protocol_analyze.per_cpu_buffer"] = "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PER_CPU_BUFFER",
      ["access_log.protocol_analyze.parse_parallels"] = "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PARSE_PARALLELS",
      ["access_log.protocol_analyze.analyze_parallels"] = "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PARALLELS",
      ["access_log.protocol_analyze.queue_size"] = "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_QUEUE_SIZE",
      ["pprof.active"] = "ROVER_PPROF_ACTIVE",
      ["pprof.port"] = "ROVER_PPROF_PORT",
      ["agent.scripts"] = "MOONROVER_AGENT_SCRIPTS",
      ["agent.http"] = "MOONROVER_AGENT_HTTP",
      ["agent.http_max_connections"] = "MOONROVER_AGENT_HTTP_MAX_CONNECTIONS",
      ["agent.http_timeout_ms"] = "MOONROVER_AGENT_HTTP_TIMEOUT_MS",
      ["agent.pid_file"] = "MOONROVER_AGENT_PID_FILE",
      ["agent.budget_ms"] = "MOONROVER_AGENT_BUDGET_MS",
      ["agent.batch"] = "MOONROVER_AGENT_BATCH",
      ["agent.queue"] = "MOONROVER_AGENT_QUEUE",
      ["agent.network"] = "MOONROVER_AGENT_NETWORK",
      ["agent.network_payload"] = "MOONROVER_AGENT_NETWORK_PAYLOAD",
      ["agent.network_buffer"] = "MOONROVER_AGENT_NETWORK_BUFFER",
    }
    for path, name in pairs(expected) do
      expected[path] = "$" .. name
    end
    assert.same(expected, named)
  end)

  it("has the same keys as the defaults", function()
    local keys = {}
    for path in pairs(leaves(config.defaults())) do
      keys[path] = true
    end
    local shipped = {}
    for path in pairs(leaves(assert(config.load_text(assert(read(SHIPPED)), SHIPPED, env({}))))) do
      shipped[path] = true
    end
    assert.same(keys, shipped)
  end)
end)

describe("config.defaults", function()
  it("holds Rover's defaults as strings", function()
    local d = config.defaults()
    assert.same("localhost:11800", d.core.backend.addr)
    assert.same("9ms", d.profiling.task.on_cpu.dump_period)
    assert.same("10000", d.access_log.flush.max_count)
    assert.same("K8S_SERVICE", d.process_discovery.kubernetes.analyzers[3].layer)
    assert.same({ ".Pod.HasServiceName" }, d.process_discovery.kubernetes.analyzers[3].filters)
    assert.is_true(yaml.is_sequence(d.process_discovery.kubernetes.analyzers))
  end)

  it("returns a fresh table each time", function()
    local d = config.defaults()
    d.logger.level = "DEBUG"
    assert.same("INFO", config.defaults().logger.level)
  end)
end)

describe("config accessors", function()
  local cfg = {
    core = { backend = { addr = "oap:11800", enable_tls = "TRUE", flag = "yes", n = "42" } },
    list = setmetatable({ "a", { k = "v" } }, yaml.sequence),
    map = { k = "v" },
  }

  local function value_of(getter, text, opts)
    return getter({ v = text }, "v", nil, opts)
  end

  it("get_string returns strings, defaults, and refuses tables", function()
    assert.same("oap:11800", config.get_string(cfg, "Core.Backend.ADDR"))
    assert.same("dflt", config.get_string(cfg, "core.backend.missing", "dflt"))
    assert.is_nil(config.get_string(cfg, "nowhere.at.all"))
    local v, err = config.get_string(cfg, "map")
    assert.is_nil(v)
    assert.equal("map: expected a single value, found a mapping", err)
  end)

  it("get selects list items by number", function()
    assert.same("v", config.get(cfg, "list.2.k"))
    assert.same("a", config.get_string(cfg, "list.1"))
    assert.same("d", config.get(cfg, "list.x", "d"))
  end)

  it("get_bool follows strconv.ParseBool in any case", function()
    for text, want in pairs({ ["true"] = true, TRUE = true, ["1"] = true, t = true, T = true,
      ["false"] = false, False = false, ["0"] = false, f = false, [""] = false }) do
      assert.equal(want, value_of(config.get_bool, text), text)
    end
    assert.is_true(config.get_bool(cfg, "core.backend.enable_TLS"))
    assert.is_false(config.get_bool(cfg, "core.backend.nothing", false))
  end)

  it("get_bool names the key and the value it refuses", function()
    local v, err = config.get_bool(cfg, "core.backend.flag")
    assert.is_nil(v)
    assert.equal('core.backend.flag: "yes" is not a boolean', err)
  end)

  it("get_int follows strconv.ParseInt with base 0", function()
    for text, want in pairs({ ["42"] = 42, ["-7"] = -7, ["+3"] = 3, ["0x1F"] = 31, ["0o17"] = 15,
      ["017"] = 15, ["0b101"] = 5, ["1_000"] = 1000, ["0"] = 0, [""] = 0 }) do
      assert.equal(want, value_of(config.get_int, text), text)
    end
    assert.equal(42, config.get_int(cfg, "core.backend.n"))
    assert.equal(9, config.get_int(cfg, "core.backend.none", 9))
  end)

  it("get_int refuses what ParseInt refuses", function()
    local refused = { "1.5", "10s", "abc", "08", "1__0", "_1", "1_", " 1", "0x", "1e3", "0x1G", "0b2",
      "99999999999999999" }
    for _, text in ipairs(refused) do
      local v, err = value_of(config.get_int, text)
      assert.is_nil(v, text)
      assert.equal('v: "' .. text .. '" is not an integer', err)
    end
  end)

  it("get_duration parses Go durations into seconds", function()
    local cases = { ["20s"] = 20, ["9ms"] = 0.009, ["1m30s"] = 90, ["1h"] = 3600, ["500us"] = 0.0005,
      ["1.5s"] = 1.5, ["10m"] = 600, ["2h45m"] = 9900, [".5s"] = 0.5, ["-1s"] = -1, ["0"] = 0,
      ["100ns"] = 1e-7, ["3\194\181s"] = 3e-6 }
    for text, want in pairs(cases) do
      local got = value_of(config.get_duration, text)
      assert.is_true(math.abs(got - want) < 1e-12, text)
    end
  end)

  it("get_duration refuses bare numbers unless plain seconds are allowed", function()
    local v, err = value_of(config.get_duration, "10")
    assert.is_nil(v)
    assert.equal('v: "10" is not a duration (like 20s, 9ms, 1m30s)', err)
    assert.equal(10, value_of(config.get_duration, "10", { plain_seconds = true }))
    assert.equal(20, value_of(config.get_duration, "20s", { plain_seconds = true }))
  end)

  it("get_duration refuses malformed durations", function()
    for _, text in ipairs({ "", "s", "1x", "1 s", "1.2.3s", ".s", "1s2", "ten seconds" }) do
      assert.is_nil(value_of(config.get_duration, text), text)
    end
  end)

  it("get_size follows go-units RAMInBytes (binary units)", function()
    local cases = { ["400KB"] = 409600, ["200KB"] = 204800, ["1MB"] = 1048576, ["1MiB"] = 1048576,
      ["512"] = 512, ["1k"] = 1024, ["1.5kb"] = 1536, ["2 GB"] = 2 * 1024 ^ 3, ["1Ki"] = 1024,
      ["3b"] = 3, ["1t"] = 1024 ^ 4 }
    for text, want in pairs(cases) do
      assert.equal(want, value_of(config.get_size, text), text)
    end
  end)

  it("get_size refuses malformed sizes", function()
    for _, text in ipairs({ "", "KB", "1.KB", "1.2.3KB", "1  KB", "-1KB", "1XB", "1KBB" }) do
      local v, err = value_of(config.get_size, text)
      assert.is_nil(v, text)
      assert.equal('v: "' .. text .. '" is not a size (like 400KB, 1MiB, 512)', err)
    end
  end)

  it("get_list takes YAML lists and comma-separated strings", function()
    assert.same({ "a", "b", "c" }, value_of(config.get_list, " a, b ,,c "))
    assert.same({}, value_of(config.get_list, ""))
    assert.same({ "x", "1" }, value_of(config.get_list, setmetatable({ "x", "1" }, yaml.sequence)))
    assert.same({ "d" }, config.get_list(cfg, "missing", { "d" }))
    local d = config.defaults()
    assert.same({ "istio-system", "cert-manager", "kube-system" },
      config.get_list(d, "access_log.exclude_namespaces"))
    assert.same({}, config.get_list(d, "process_discovery.kubernetes.namespaces"))
  end)

  it("get_list refuses mappings and nested items", function()
    local v, err = config.get_list(cfg, "map")
    assert.is_nil(v)
    assert.equal("map: expected a list, found a mapping", err)
    v, err = config.get_list(cfg, "list")
    assert.is_nil(v)
    assert.equal("list: item 2 is a mapping, not a single value", err)
  end)

  it("types every default of the shipped file", function()
    local c = assert(config.load_text(assert(read(SHIPPED)), SHIPPED, env({})))
    assert.same(false, config.get_bool(c, "core.backend.enable_TLS"))
    assert.same(5, config.get_int(c, "core.backend.check_period"))
    assert.same(20, config.get_duration(c, "process_discovery.heartbeat_period"))
    assert.same(600, config.get_duration(c, "profiling.continuous.trigger.execute_duration"))
    assert.same(409600, config.get_size(c, "profiling.task.network.protocol_analyze.per_cpu_buffer"))
    assert.same(204800, config.get_size(c, "access_log.connection_analyze.per_cpu_buffer"))
    assert.same(65536, config.get_int(c, "agent.queue"))
    assert.same(6060, config.get_int(c, "pprof.port"))
  end)
end)
