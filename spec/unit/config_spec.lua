-- Specs for configuration loading: Rover's override rule, case-insensitive
-- keys, known sections, merge over defaults, typed accessors, the shipped file.
local config = require("moonrover.config")
local yaml = require("moonrover.lib.yaml")

local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)spec/unit/[^/]*$") or "")
local SHIPPED = ROOT .. "configs/rover_configs.yaml"

local temp_files = {}

local function write_temp(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  temp_files[#temp_files + 1] = path
  return path
end

local function env(vars)
  return { getenv = function(name) return vars[name] end }
end

local function load_text(text, vars)
  return config.load(write_temp(text), env(vars or {}))
end

local function load_ok(text, vars)
  local cfg, err = load_text(text, vars)
  assert.is_nil(err)
  return cfg
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

after_each(function()
  for _, path in ipairs(temp_files) do
    os.remove(path)
  end
  temp_files = {}
end)

describe("config.load", function()
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
    local cfg = load_ok("process_discovery:\n  kubernetes:\n    analyzers:\n      - layer: GENERAL\n")
    assert.same({ { layer = "GENERAL" } }, cfg.process_discovery.kubernetes.analyzers)
    assert.same("true", cfg.process_discovery.kubernetes.active)
  end)

  it("keeps unknown nested keys, as mapstructure ignores them", function()
    local cfg = load_ok("process_discovery:\n  scanner:\n    period: 1s\n")
    assert.same("1s", config.get_string(cfg, "process_discovery.scanner.period"))
  end)

  it("lowercases every key, in lists too", function()
    local cfg = load_ok("Core:\n  Backend:\n    enable_TLS: true\nagent:\n  X:\n    - Name: a\n")
    assert.same("true", cfg.core.backend.enable_tls)
    assert.is_nil(cfg.core.backend.enable_TLS)
    assert.same({ { name = "a" } }, cfg.agent.x)
  end)

  it("rejects keys that differ only in case", function()
    local _, err = load_text("core:\n  backend:\n    enable_TLS: true\n    enable_tls: false\n")
    assert.matches('key "core.backend.enable_tls" is given twice', err, 1, true)
  end)

  it("rejects an unknown top-level key, naming it and the file", function()
    local path = write_temp("profilng:\n  active: true\n")
    local _, err = config.load(path, env({}))
    assert.equal('unknown top-level key "profilng" in ' .. path ..
      " (known: agent, access_log, core, logger, pprof, process_discovery, profiling)", err)
  end)

  it("rejects a scalar where a section is expected", function()
    local path = write_temp("core:\n  backend: oap:11800\n")
    local _, err = config.load(path, env({}))
    assert.equal(path .. ": core.backend must be a mapping", err)
  end)

  it("rejects a top level that is not a mapping", function()
    local path = write_temp("- a\n")
    local _, err = config.load(path, env({}))
    assert.equal(path .. ": the top level must be a mapping of modules", err)
  end)

  it("passes YAML errors through with the file and line", function()
    local path = write_temp("core:\n  a: 1\n  a: 2\n")
    local _, err = config.load(path, env({}))
    assert.equal(path .. ':3: duplicate key "a" (first at line 2)', err)
  end)

  it("reports a file it cannot read", function()
    local _, err = config.load("/nonexistent/rover.yaml")
    assert.equal("cannot read /nonexistent/rover.yaml: No such file or directory", err)
  end)

  it("tells which sections the file had", function()
    local cfg = load_ok("logger:\n  level: DEBUG\nProfiling:\n  active: false\n")
    assert.is_true(config.has_section(cfg, "logger"))
    assert.is_true(config.has_section(cfg, "profiling"))
    assert.is_false(config.has_section(cfg, "access_log"))
    assert.is_false(config.has_section(config.defaults(), "logger"))
  end)
end)

describe("config.load environment overrides", function()
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
    local cfg = load_ok("agent:\n  t: ${T:{{.Pod.Name}}.{{.Pod.Namespace}}}\n")
    assert.same("{{.Pod.Name}}.{{.Pod.Namespace}}", cfg.agent.t)
  end)

  it("leaves partial matches and lowercase names untouched", function()
    local cfg = load_ok("agent:\n  a: x${A:b}\n  b: ${A:b}y\n  c: ${a:b}\n  d: ${A}\n",
      { A = "set", a = "set" })
    assert.same({ a = "x${A:b}", b = "${A:b}y", c = "${a:b}", d = "${A}" },
      { a = cfg.agent.a, b = cfg.agent.b, c = cfg.agent.c, d = cfg.agent.d })
  end)

  it("applies to strings inside lists and mappings in lists", function()
    local cfg = load_ok("agent:\n  l:\n    - ${A:one}\n    - k: ${B:two}\n"
      .. "      m: ['${A:x}', \"${C:three}\"]\n",
      { A = "env-a" })
    assert.same({ "env-a", { k = "two", m = { "env-a", "three" } } }, cfg.agent.l)
  end)

  it("looks variables up with os.getenv by default", function()
    local path = write_temp("agent:\n  home: ${HOME:none}\n")
    local cfg = assert(config.load(path))
    assert.same(os.getenv("HOME") or "none", cfg.agent.home)
  end)
end)

describe("the shipped configs/rover_configs.yaml", function()
  it("equals the built-in defaults when no variable is set", function()
    local cfg, err = config.load(SHIPPED, env({}))
    assert.is_nil(err)
    assert.same(config.defaults(), cfg)
  end)

  it("takes an override of one key from the environment", function()
    local cfg = assert(config.load(SHIPPED, env({ ROVER_BACKEND_ADDR = "oap:11800" })))
    local expected = config.defaults()
    expected.core.backend.addr = "oap:11800"
    assert.same(expected, cfg)
  end)

  it("makes every value overridable by Rover's variable names", function()
    local cfg = assert(config.load(SHIPPED, { getenv = function(name) return "$" .. name end }))
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
    }
    for path, name in pairs(expected) do
      expected[path] = "$" .. name
    end
    assert.same(expected, leaves(cfg))
  end)

  it("has the same keys as the defaults", function()
    local keys = {}
    for path in pairs(leaves(config.defaults())) do
      keys[path] = true
    end
    local shipped = {}
    for path in pairs(leaves(assert(config.load(SHIPPED, env({}))))) do
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
    local c = assert(config.load(SHIPPED, env({})))
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
