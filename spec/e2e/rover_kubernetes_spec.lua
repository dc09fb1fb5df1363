-- End-to-end specs of the Rover drop-in's Kubernetes discovery: the
-- stand-in API server (support/kube_api.lua, HTTPS, bearer token, list and
-- watch) serves pods whose containers are real cgroups with real processes
-- in them (support/kube_pods.lua), and the stand-in OAP sees the entities
-- the default analyzers give, as Rover names them; profiling and NETWORK
-- tasks run for pod processes; the API server may go away for a minute.
local clock = require("support.clock")
local e2e = require("support.e2e")
local kube_api = require("support.kube_api")
local kube_pods = require("support.kube_pods")
local oap = require("support.oap")
local rover_run = require("support.rover_run")
local servers = require("support.servers")
local write = require("support.files").write

local q = e2e.quote
local skip_reason = e2e.skip_reason() or servers.cgroup_skip_reason()
  or (e2e.run("test -x " .. kube_api.python) ~= 0 and "no " .. kube_api.python)
local it = require("support.skip").guard(it, pending, skip_reason)

local NODE = "node-spec"
-- The drop-in's schedule with CONFIG's periods (rover_spec.lua explains
-- it); pods are matched to processes at every scan (each heartbeat) and
-- when a new process starts; a full scan every FULL_SCAN_S. rover_run.SLACK_S is added to every deadline.
local HEARTBEAT_S, CHECK_S, FLUSH_S, TICK_S, REPORT_S = 1, 1, 1, 1, 1
local REPORTED_S = 0.5 + HEARTBEAT_S
-- Every process is matched to the pods again this often (as Rover does).
local FULL_SCAN_S = 5
local TASK_DATA_S = CHECK_S + TICK_S + FLUSH_S
-- What the issue asks of a pod added while the agent runs.
local POD_ADDED_S = 10
-- The API server's outage, and the watch's longest backoff after it.
local OUTAGE_S, BACKOFF_S = 60, 30

local CONFIG = [[
core:
  cluster_name: <cluster>
  backend:
    addr: 127.0.0.1:<port>
process_discovery:
  heartbeat_period: <heartbeat>s
  properties_report_period: <properties>
  kubernetes:
    active: true
    node_name: <node>
    namespaces: <namespaces>
profiling:
  check_interval: <check>s
  flush_interval: <flush>s
  task:
    network:
      report_interval: <report>s
]]

-- Every reportProcesses entry (k8sProcess metadata) for pid, oldest first.
local function reports_of(stub, pid)
  local out = {}
  for _, r in ipairs(stub:records("reportProcesses")) do
    for _, p in ipairs(r.message.processes or {}) do
      local k = p.k8sProcess
      if k and tonumber(oap.key_values(k.properties).pid) == pid then
        out[#out + 1] = { time = r.time, meta = k }
      end
    end
  end
  return out
end

-- The keepAlive pings of entity (its names) after time ms.
local function kept_alive_after(stub, service, time)
  local n = 0
  for _, r in ipairs(stub:records("keepAlive")) do
    for _, p in ipairs(r.message.processes or {}) do
      if r.time > time and p.entityMetadata and p.entityMetadata.serviceName == service then
        n = n + 1
      end
    end
  end
  return n
end

describe("Rover drop-in Kubernetes discovery (end to end, stand-in API server and OAP)", function()
  local dir, api, stub, agent, pods

  before_each(function()
    dir = e2e.tmpdir()
    pods = {}
  end)

  after_each(function()
    rover_run.stop(agent, stub)
    agent, stub = nil, nil
    for _, pod in ipairs(pods) do
      pod:remove()
    end
    if api then
      api:stop()
      api = nil
    end
    e2e.rmdir(dir)
  end)

  local function await(what, due, fn)
    return rover_run.await(stub, agent, what, due, fn, function()
      local lines = {}
      for _, r in ipairs(api and api:requests() or {}) do
        lines[#lines + 1] = string.format("%s %s %s", r.method, r.path, r.code)
      end
      return "API server requests:\n" .. table.concat(lines, "\n", math.max(1, #lines - 20))
    end)
  end

  -- A pod of the case: its processes started (cmds: container name -> shell
  -- words), put on the API server unless opts.later. Returns the pod and
  -- the pids by container name.
  local function pod(opts, cmds)
    local p = kube_pods.new(api, dir, opts)
    pods[#pods + 1] = p
    local pids = {}
    for name, cmd in pairs(cmds) do
      pids[name] = p.containers[name]:start(cmd)
    end
    if not opts.later then
      assert(p:put())
    end
    return p, pids
  end

  -- The case's own copy of a workload, as a command line.
  local function workload(name)
    local copy = dir .. "/workloads/" .. name
    os.execute("mkdir -p " .. q(dir .. "/workloads") .. " && { test -e " .. q(copy) .. " || cp "
      .. q(e2e.workloads .. "/" .. name) .. " " .. q(copy) .. "; }")
    return q(dir .. "/workloads/" .. name) .. " 120"
  end

  local function start_api(token)
    os.execute("mkdir -p " .. q(dir .. "/api"))
    api = assert(kube_api.start({ dir = dir .. "/api", token = token or "spec-token", node = NODE }))
  end

  -- opts: cluster (""), namespaces (""), properties (10), extra (agent
  -- options), how (rover_run's env and bin; default KUBECONFIG).
  local function start_agent(opts)
    opts = opts or {}
    stub = stub or assert(oap.start({ dir = dir }))
    local values = { port = stub.port, cluster = opts.cluster or '""', node = NODE,
      namespaces = opts.namespaces or '""', heartbeat = HEARTBEAT_S, properties = opts.properties or 10,
      check = CHECK_S, flush = FLUSH_S, report = REPORT_S }
    local how = opts.how or { env = "KUBECONFIG=" .. q(api:kubeconfig(dir .. "/kubeconfig")) }
    agent = rover_run.start_agent(dir, CONFIG, values, opts.extra, nil, how)
  end

  local function await_reported(pid, due)
    return await("pid " .. pid .. " reported", due or REPORTED_S, function()
      return reports_of(stub, pid)[1]
    end)
  end

  local function shop_pods()
    start_api()
    assert(api:add_service(kube_api.service({ namespace = "shop", name = "web", selector = { app = "web" },
      ports = { 8080 } })))
    local _, web = pod({ namespace = "shop", name = "web-1", node = NODE, labels = { app = "web" },
      containers = { { name = "web" } } }, { web = workload("cpu_ratio") })
    local _, cart = pod({ namespace = "shop", name = "cart-1", node = NODE,
      labels = { ["service.istio.io/canonical-name"] = "cart", app = "cart-app" },
      containers = { { name = "cart" }, { name = "istio-proxy" } } },
      { cart = workload("cpu_ratio"), ["istio-proxy"] = workload("sleeper") })
    return web.web, cart.cart, cart["istio-proxy"]
  end

  it("reports pod processes with the names and layers the default analyzers give", function()
    local web, cart, envoy = shop_pods()
    start_agent({ cluster = "c1" })
    local w = await_reported(web).meta
    assert.same({ layer = "K8S_SERVICE", serviceName = "c1::web.shop", instanceName = "web-1",
      processName = "cpu_ratio", labels = { "k8s-service" } }, w.entity)
    local props = oap.key_values(w.properties)
    assert.same(tostring(web), props.pid)
    assert.same("true", props.support_ebpf_profiling)
    local c = await_reported(cart).meta
    assert.same({ layer = "MESH", serviceName = "c1::cart.shop", instanceName = "cart-1",
      processName = "cpu_ratio", labels = { "mesh-application" } }, c.entity)
    local e = await_reported(envoy).meta
    assert.same({ layer = "MESH_DP", serviceName = "c1::cart.shop", instanceName = "cart-1",
      processName = "sleeper", labels = { "mesh-envoy" } }, e.entity)
    -- Only this node's pods were asked for, by a watch after a list.
    local watched = api:requests(function(r) return r.path == "/api/v1/pods" and r.query.watch end)
    assert.is_true(#watched > 0)
    assert.same("spec.nodeName=" .. NODE, watched[1].query.fieldSelector)
  end)

  it("reports a pod added after start within 10 s and stops reporting it once deleted", function()
    start_api()
    start_agent()
    await("the agent's pod watch", REPORTED_S, function() return api:wait_watches(2, 1) end)
    assert(api:add_service(kube_api.service({ namespace = "shop", name = "late", selector = { app = "late" } })))
    local late, pids = pod({ namespace = "shop", name = "late-1", node = NODE, labels = { app = "late" },
      containers = { { name = "late" } }, later = true }, { late = workload("cpu_ratio") })
    local put_ms = clock.now_ms()
    assert(late:put())
    local seen = await_reported(pids.late, POD_ADDED_S)
    assert.is_true(seen.time - put_ms <= POD_ADDED_S * 1000,
      string.format("reported %d ms after the pod was put", seen.time - put_ms))
    assert.same("late.shop", seen.meta.entity.serviceName)
    -- Deleted from the API server while its process still runs: the next
    -- full scan drops it, and no later heartbeat keeps it alive.
    assert(api:delete_pod("shop", "late-1"))
    os.execute("sleep " .. FULL_SCAN_S + 2 * HEARTBEAT_S)
    local dropped_ms = clock.now_ms()
    os.execute("sleep " .. 3 * HEARTBEAT_S)
    assert.equal(0, kept_alive_after(stub, "late.shop", dropped_ms))
  end)

  it("runs an ON_CPU task on a pod's process", function()
    local _, cart = shop_pods()
    start_agent()
    await_reported(cart)
    local now = clock.now_ms()
    stub:write_tasks({ { taskId = "spec-pod-cpu", updateTime = now, startTime = now, duration = 60,
      serviceName = "cart.shop", targetType = "ON_CPU" } })
    local data = await("data of the ON_CPU task", TASK_DATA_S + FLUSH_S, function()
      local d = stub:task_data("spec-pod-cpu")
      return #d > 0 and d
    end)
    local leaves = {}
    for _, r in ipairs(stub:records("collectProfilingData")) do
      for _, st in ipairs(r.message.onCPU and r.message.onCPU.stacks or {}) do
        if st.stackType == "PROCESS_USER_SPACE" then
          leaves[st.stackSymbols[1]] = true
        end
      end
    end
    assert.is_true(#data > 0)
    assert.is_true(leaves.burn_alpha or false)
  end)

  -- A Python HTTP server in pod web-1 and a curl in pod client-1.
  local function web_and_client()
    start_api()
    assert(api:add_service(kube_api.service({ namespace = "shop", name = "web", selector = { app = "web" } })))
    local web = pod({ namespace = "shop", name = "web-1", node = NODE, labels = { app = "web" },
      containers = { { name = "web" } } }, {})
    local server = servers.http_server(web.containers.web, dir, { "/ok=200" })
    local client = pod({ namespace = "shop", name = "client-1", node = NODE, labels = { app = "client" },
      containers = { { name = "fetch" } } }, {})
    return server, client.containers.fetch
  end

  it("runs a NETWORK task on a pod's server and names the coroot containers /k8s/...", function()
    local server, fetch = web_and_client()
    start_agent({ extra = "--network on --script-memory 1024" })
    local names = await_reported(server.pid).meta.entity
    local now = clock.now_ms()
    stub:write_tasks({ { taskId = "spec-pod-net", updateTime = now, startTime = now, duration = 120,
      serviceName = "web.shop", instanceName = "web-1", targetType = "NETWORK" } })
    await("the NETWORK task running", CHECK_S + TICK_S, function()
      return agent:metric("moonrover_rover_tasks_running") == 1
    end)
    -- One curl asks 5 times, each on a connection of its own, then waits
    -- on a FIFO: the tracer reads a process's cgroup when it first meets it,
    -- so the client must outlive the agent's next drain.
    local sent, hold = 5, dir .. "/curl.hold"
    assert(os.execute("mkfifo " .. q(hold)) == 0)
    local words = { "curl -s --max-time 60" }
    for _ = 1, sent do
      words[#words + 1] = "-o /dev/null -H 'Connection: close' http://127.0.0.1:" .. server.port .. "/ok"
    end
    words[#words + 1] = "-o /dev/null file://" .. hold
    local curl = fetch:start(table.concat(words, " "))
    local id = oap.process_id(names.serviceName, names.instanceName, names.processName)
    await(sent .. " requests metered on the pod's server side", REPORT_S, function()
      return stub:meter_sum("rover_net_p_http1_request_counter", { server_process_id = id, side = "server" }) >= sent
    end)
    local dst = "127.0.0.1:" .. server.port
    -- client-1 is named as a StatefulSet's pods are: coroot's app_id is its set's.
    local series = string.format('container_net_tcp_successful_connects_total{actual_destination="%s",'
      .. 'app_id="/k8s/shop/client",container_id="/k8s/shop/client-1/fetch",destination="%s"}', dst, dst)
    rover_run.await(stub, agent, "coroot's connects of the client pod", 5, function()
      return (agent:metric(series) or 0) >= sent
    end, function()
      local lines = {}
      for line in (agent:get("/metrics") or ""):gmatch("[^\n]+") do
        if line:find("^container_net_tcp_successful_connects_total") then
          lines[#lines + 1] = line
        end
      end
      return "connects on /metrics:\n" .. table.concat(lines, "\n")
    end)
    os.execute("timeout 10 sh -c " .. q("echo >" .. hold))
    fetch:stop(curl)
  end)

  it("finds the API server in-cluster, by the service account's token and CA, and follows the token", function()
    local _, cart = shop_pods()
    local sa = "/run/secrets/kubernetes.io/serviceaccount"
    local mount = table.concat({
      "mount -t tmpfs moonrover-spec /run", "mkdir -p " .. sa,
      "cp " .. q(api.ca) .. " " .. sa .. "/ca.crt", "printf %s spec-token >" .. sa .. "/token",
      "printf shop >" .. sa .. "/namespace", 'exec "$@"' }, " && ")
    local bin = "unshare -m --propagation private sh -c " .. q(mount) .. " sh " .. q(e2e.bin)
    start_agent({ how = { bin = bin, env = "KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="
      .. api.port .. " KUBECONFIG=/nonexistent" } })
    await_reported(cart)
    -- Rotated: the API server takes only the new token, which the kubelet
    -- writes into the agent's file; the agent's next requests carry it.
    assert(api:set_token("spec-token-2"))
    write("/proc/" .. agent.pid .. "/root" .. sa .. "/token", "spec-token-2")
    local rotated_ms = clock.now_ms()
    api:drop_watches()
    await("a request with the new token", 5, function()
      return #api:requests(function(r) return r.time > rotated_ms and r.authorized ~= false end) > 0
    end)
    local late, pids = pod({ namespace = "shop", name = "after-rotation", node = NODE, labels = {},
      containers = { { name = "app" } }, later = true }, { app = workload("cpu_ratio") })
    assert(api:add_service(kube_api.service({ namespace = "shop", name = "rotated",
      selector = { ["moonrover-spec"] = "rotated" } })))
    late.opts.labels = { ["moonrover-spec"] = "rotated" }
    assert(late:put())
    assert.same("rotated.shop", await_reported(pids.app, POD_ADDED_S).meta.entity.serviceName)
  end)

  it("keeps profiling while the API server is away for 60 s and reports nothing twice", function()
    local _, cart = shop_pods()
    start_agent({ properties = 1000 })
    await_reported(cart)
    api:kill()
    local down_ms = clock.now_ms()
    local now = clock.now_ms()
    stub:write_tasks({ { taskId = "spec-outage", updateTime = now, startTime = now, duration = 180,
      serviceName = "cart.shop", targetType = "ON_CPU" } })
    os.execute("sleep " .. OUTAGE_S)
    local during = 0
    for _, r in ipairs(stub:records("collectProfilingData")) do
      if r.time > down_ms and r.time < down_ms + OUTAGE_S * 1000 then
        during = during + 1
      end
    end
    assert.is_true(during >= 10, during .. " profiling messages during the outage")
    assert(api:start())
    local up_ms = clock.now_ms()
    await("the pod watch resumed", BACKOFF_S, function()
      return #api:requests(function(r) return r.time > up_ms and r.path == "/api/v1/pods" and r.query.watch end) > 0
    end)
    local late, pids = pod({ namespace = "shop", name = "after-outage", node = NODE, labels = { app = "web" },
      containers = { { name = "web" } }, later = true }, { web = workload("cpu_ratio") })
    assert(api:add_service(kube_api.service({ namespace = "shop", name = "web", selector = { app = "web" } })))
    assert(late:put())
    await_reported(pids.web, POD_ADDED_S)
    assert.equal(1, #reports_of(stub, cart), "the cart process reported once")
  end)
end)
