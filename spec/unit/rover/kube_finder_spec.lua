-- Specs for kube_finder.lua: Rover's Kubernetes process discovery over a fake pod index.
local config = require("moonrover.config")
local fake_pod_index = require("support.fake_pod_index")
local fake_proc_facts = require("support.fake_proc_facts")
local finder = require("moonrover.rover.kube_finder")

local ENVOY_ID, REVIEWS_ID, CART_ID, GONE_ID = ("a"):rep(64), ("b"):rep(64), ("c"):rep(64), ("d"):rep(64)

local DEFAULTS = finder.analyzers(config.get(config.defaults(), "process_discovery.kubernetes.analyzers"))

local cgroup_v1, cgroup_v2, fake_sys = fake_proc_facts.cgroup_v1, fake_proc_facts.cgroup_v2, fake_proc_facts.sys

local PROCS = {
  [1] = { cgroup = cgroup_v2(CART_ID), cmdline = "/usr/bin/moonrover agent", comm = "moonrover",
    exe = "/usr/bin/moonrover" },
  [100] = { cgroup = cgroup_v2(ENVOY_ID), cmdline = "/usr/local/bin/envoy -c /etc/istio/proxy/envoy-rev.json",
    comm = "envoy", exe = "/usr/local/bin/envoy", cwd = "/", start = 5e9 },
  [200] = { cgroup = cgroup_v1(REVIEWS_ID), cmdline = "/opt/reviews/bin/reviews-server --port 9080",
    comm = "reviews-server", exe = "/opt/reviews/bin/reviews-server", cwd = "/opt/reviews", start = 6e9 },
  [300] = { cgroup = cgroup_v2(CART_ID), cmdline = "/app/cart-service-frontend --listen :8080",
    comm = "cart-service-fr", exe = "/app/cart-service-frontend", cwd = "/app", start = 7e9 },
  [400] = { cgroup = "0::/system.slice/sshd.service\n", cmdline = "sshd: /usr/sbin/sshd -D", comm = "sshd",
    exe = "/usr/sbin/sshd" },
  [500] = { cgroup = cgroup_v2(GONE_ID), cmdline = "/bin/sleep 1000", comm = "sleep", exe = "/bin/sleep" },
  [600] = { cgroup = cgroup_v2(CART_ID), cmdline = "python3 /app/worker.py", comm = "python3",
    exe = "/usr/bin/python3.11", start = 8e9 },
}

local function scene()
  local index = fake_pod_index.new()
  local reviews = index:add(fake_pod_index.pod({ name = "reviews-v1-5b8f7c-x2x9", namespace = "bookinfo",
    ip = "10.244.1.12", labels = { app = "reviews", ["service.istio.io/canonical-name"] = "reviews" },
    containers = { { name = "reviews", id = REVIEWS_ID, env = { { name = "LOG_DIR", value = "/tmp/logs" } } },
      { name = "istio-proxy", id = ENVOY_ID } } }))
  index:set_service(reviews, "reviews")
  local cart = index:add(fake_pod_index.pod({ name = "cart-7d9c5-qv8lp", namespace = "shop", ip = "10.244.1.20",
    labels = { ["app.kubernetes.io/name"] = "cart" }, containers = { { name = "cart", id = CART_ID } } }))
  index:set_service(cart, "cart-api")
  return index, reviews, cart
end

local function new_finder(index, opts)
  opts = opts or {}
  return assert(finder.new({ analyzers = opts.analyzers or DEFAULTS, instance_id = "agent-uuid",
    cluster_name = opts.cluster_name }, fake_sys(opts.procs or PROCS), index))
end

-- "pid layer service instance process labels" for each process found.
local function names(processes)
  local out = {}
  for i, p in ipairs(processes) do
    local e = p.entity
    out[i] = string.format("%d %s %s %s %s %s", p.pid, e.layer, e.serviceName, e.instanceName, e.processName,
      table.concat(e.labels, ","))
  end
  return out
end

describe("kube_finder with Rover's default analyzers", function()
  it("names an istio pod's envoy and application, and each as its Kubernetes service", function()
    local index = scene()
    local processes, problems = new_finder(index):scan()
    assert.same({}, problems)
    assert.same({
      "100 MESH_DP reviews.bookinfo reviews-v1-5b8f7c-x2x9 envoy mesh-envoy",
      "100 K8S_SERVICE reviews.bookinfo reviews-v1-5b8f7c-x2x9 envoy k8s-service",
      "200 MESH reviews.bookinfo reviews-v1-5b8f7c-x2x9 reviews-server mesh-application",
      "200 K8S_SERVICE reviews.bookinfo reviews-v1-5b8f7c-x2x9 reviews-server k8s-service",
      "300 K8S_SERVICE cart-api.shop cart-7d9c5-qv8lp cart-service-frontend k8s-service",
      "600 K8S_SERVICE cart-api.shop cart-7d9c5-qv8lp python3 k8s-service",
    }, names(processes))
  end)

  it("reports Rover's Kubernetes properties", function()
    local processes = new_finder(scene()):scan()
    local envoy = processes[1]
    assert.equal("kubernetes", envoy.kind)
    assert.equal(ENVOY_ID, envoy.container_id)
    assert.equal(5e9, envoy.start_ns)
    assert.same({ host_ip = "10.0.0.7", container_ip = "10.244.1.12", container_name = "istio-proxy",
      pod_name = "reviews-v1-5b8f7c-x2x9", pid = "100",
      command_line = "/usr/local/bin/envoy -c /etc/istio/proxy/envoy-rev.json", support_ebpf_profiling = "true" },
      envoy.properties)
    assert.equal("false", processes[6].properties.support_ebpf_profiling)
  end)

  it("prefixes the cluster name to service names that have none", function()
    local index, _, cart = scene()
    index:set_service(cart, "ops::cart-api")
    local processes = new_finder(index, { cluster_name = "prod" }):scan()
    local services = {}
    for i, p in ipairs(processes) do
      services[i] = p.entity.serviceName
    end
    assert.same({ "prod::reviews.bookinfo", "prod::reviews.bookinfo", "prod::reviews.bookinfo",
      "prod::reviews.bookinfo", "ops::cart-api.shop", "ops::cart-api.shop" }, services)
  end)

  it("names nothing for a pod whose filters are all false", function()
    local index, reviews, cart = scene()
    index:set_service(reviews, nil)
    index:set_service(cart, nil)
    reviews.spec.containers[2].name = "sidecar"
    reviews.status.containerStatuses[2].name = "sidecar"
    local processes, problems = new_finder(index):scan()
    assert.same({}, processes)
    assert.same({}, problems)
  end)

  it("leaves out processes in no container the index knows, and itself", function()
    local f = new_finder(scene())
    local processes = f:scan()
    for _, p in ipairs(processes) do
      assert.is_true(p.pid ~= 1 and p.pid ~= 400 and p.pid ~= 500)
    end
    assert.equal(4, f.matched)
  end)

  it("skips an init container, which Rover does not pair with a spec container", function()
    local index, _, cart = scene()
    cart.spec.initContainers, cart.spec.containers = cart.spec.containers, {}
    local processes = new_finder(index):scan({ 300 })
    assert.same({}, processes)
  end)

  it("scans only the pids given, keeping what a full scan counted", function()
    local f = new_finder(scene())
    f:scan()
    assert.same({ "300 K8S_SERVICE cart-api.shop cart-7d9c5-qv8lp cart-service-frontend k8s-service" },
      names(f:scan({ 300, 400, 999 })))
    assert.equal(4, f.matched)
  end)

  it("gives the pids in containers it does not know yet, to look at again", function()
    local processes, _, waiting = new_finder(scene()):scan({ 300, 400, 500 })
    assert.equal(1, #processes)
    assert.same({ 500 }, waiting)
  end)
end)

local function analyzer(fields)
  local a = { active = true, filters = {}, layer = "GENERAL", service_name = "svc",
    instance_name = "{{.Pod.Name}}", process_name = "{{.Process.ExeName}}", labels = "" }
  for k, v in pairs(fields) do
    a[k] = v
  end
  return a
end

local function only(pid)
  return { [pid] = PROCS[pid] }
end

local function render(service_name, pid)
  local processes, problems = new_finder(scene(), { analyzers = { analyzer({ service_name = service_name }) },
    procs = only(pid or 200) }):scan()
  return processes[1] and processes[1].entity.serviceName, problems[1]
end

describe("kube_finder templates", function()
  it("gives the .Rover, .Process, .Pod and .Container fields", function()
    assert.equal("agent-uuid node-1 10.0.0.7 192.168.5.9 fd00::7",
      render('{{.Rover.InstanceID}} {{.Rover.HostName}} {{.Rover.HostIPV4 "eth0"}} {{.Rover.HostIPV4 "eth1"}} '
        .. '{{.Rover.HostIPV6 "eth0"}}'))
    assert.equal("/opt/reviews/bin/reviews-server reviews-server 200 /opt/reviews /opt/reviews/bin/reviews-server",
      render("{{.Process.ExeFilePath}} {{.Process.ExeName}} {{.Process.Pid}} {{.Process.WorkDir}} "
        .. "{{.Process.ExeNameInCommandLine}}"))
    assert.equal("/opt/reviews/bin/reviews-server --port 9080", render("{{.Process.CommandLine}}"))
    assert.equal("bookinfo node-1 reviews", render("{{.Pod.Namespace}} {{.Pod.Node}} {{.Pod.ServiceName}}"))
    assert.equal("reviews containerd://" .. REVIEWS_ID .. " /tmp/logs",
      render('{{.Container.Name}} {{.Container.ID}} {{.Container.EnvValue "HOME,LOG_DIR"}}'))
    assert.equal("istio-proxy", render('{{(.Pod.FindContainer "istio-proxy").Name}}'))
    assert.equal("none", render('{{.Pod.LabelValue "version,tier" "none"}}'))
    assert.equal("reviews", render('{{.Pod.LabelValue "version,app"}}'))
    local _, problem = render('{{.Pod.LabelValue "version"}}')
    assert.matches("error calling LabelValue: could not found matches label, want names: [version], actual names: "
      .. "[app service.istio.io/canonical-name]", problem, 1, true)
  end)

  it("gives an owner by kind, and the service for the kind service", function()
    local index, reviews = scene()
    index:set_owners(reviews, { { kind = "ReplicaSet", name = "reviews-v1-5b8f7c" },
      { kind = "Deployment", name = "reviews-v1" } })
    local f = new_finder(index, { procs = only(200), analyzers = {
      analyzer({ service_name = '{{.Pod.OwnerName "StatefulSet,Deployment"}}',
        filters = { '.Pod.HasOwnerName "Deployment"' } }),
      analyzer({ service_name = '{{.Pod.OwnerName "Service,Deployment"}}', layer = "K8S_SERVICE" }),
      analyzer({ service_name = "x", filters = { '.Pod.HasOwnerName "DaemonSet"' } }),
    } })
    assert.same({ "200 GENERAL reviews-v1 reviews-v1-5b8f7c-x2x9 reviews-server ",
      "200 K8S_SERVICE reviews reviews-v1-5b8f7c-x2x9 reviews-server " }, names(f:scan()))
  end)

  it("judges labels with a selector, as Kubernetes' label maps", function()
    local f = new_finder(scene(), { procs = only(200), analyzers = {
      analyzer({ service_name = "a", filters = { '.Pod.LabelSelector "app=reviews"' } }),
      analyzer({ service_name = "b", filters = { '.Pod.LabelSelector "app = reviews, tier=web"' } }),
      analyzer({ service_name = "c", filters = { '.Pod.LabelSelector ""' } }),
    } })
    local out = {}
    for i, p in ipairs(f:scan()) do
      out[i] = p.entity.serviceName
    end
    assert.same({ "a", "c" }, out)
    local _, problem = new_finder(scene(), { procs = only(200), analyzers = {
      analyzer({ filters = { '.Pod.LabelSelector "app"' } }) } }):scan()
    assert.matches("error calling LabelSelector: invalid selector: [app]", problem[1], 1, true)
  end)

  it("takes the command's first word as ExeName when the kernel's name is cut", function()
    local processes = new_finder(scene(), { procs = only(300) }):scan()
    assert.equal("cart-service-frontend", processes[1].entity.processName)
    local procs = { [300] = { cgroup = PROCS[300].cgroup, cmdline = "./bin/launcher-of-the-cart --x",
      comm = "cart-service-fr", exe = "/app/cart-service-frontend" } }
    processes = new_finder(scene(), { procs = procs }):scan()
    assert.equal("./bin/launcher-of-the-cart", processes[1].entity.processName)
  end)

  it("tries a process again at the next scan while its owners are fetched", function()
    local index, reviews = scene()
    index:set_owners(reviews, "pending")
    local f = new_finder(index, { procs = only(200),
      analyzers = { analyzer({ service_name = '{{.Pod.OwnerName "Deployment"}}' }) } })
    local processes, problems, waiting = f:scan()
    assert.same({}, processes)
    assert.same({}, problems)
    assert.same({ 200 }, waiting)
    assert.same({ 200 }, f.pending_pids)
    assert.equal(1, f.pending)
    assert.equal(0, f.matched)
    index:set_owners(reviews, { { kind = "Deployment", name = "reviews-v1" } })
    assert.same({ "200 GENERAL reviews-v1 reviews-v1-5b8f7c-x2x9 reviews-server " }, names(f:scan()))
    assert.equal(0, f.pending)
  end)

  it("waits for owners a filter needs too", function()
    local index, reviews = scene()
    index:set_owners(reviews, "pending")
    local f = new_finder(index, { procs = only(200),
      analyzers = { analyzer({ filters = { '.Pod.HasOwnerName "Deployment"' } }) } })
    local processes, problems = f:scan()
    assert.same({}, processes)
    assert.same({}, problems)
    assert.equal(1, f.pending)
  end)

  it("names the pid, pod, analyzer, field and template of a failed rendering, once", function()
    local f = new_finder(scene(), { procs = only(200), analyzers = { DEFAULTS[3],
      analyzer({ service_name = '{{.Container.EnvValue "HOME"}}' }) } })
    local processes, problems = f:scan()
    assert.same({}, processes)
    assert.same({ 'pid 200 (pod bookinfo/reviews-v1-5b8f7c-x2x9, container reviews): analyzer 2: service_name '
      .. '"{{.Container.EnvValue \\"HOME\\"}}": service_name:1:3: error calling EnvValue: could not found matches '
      .. "environment, want names: [HOME], actual names: [LOG_DIR]" }, problems)
    assert.same({}, select(2, f:scan()))
  end)

  it("names a filter that fails or is not a boolean", function()
    local _, problems = new_finder(scene(), { procs = only(200),
      analyzers = { analyzer({ filters = { ".Pod.Name" } }) } }):scan()
    assert.same({ 'pid 200 (pod bookinfo/reviews-v1-5b8f7c-x2x9, container reviews): analyzer 1: filter ".Pod.Name": '
      .. 'filters[1]: "reviews-v1-5b8f7c-x2x9" is not a boolean' }, problems)
  end)

  it("skips inactive analyzers", function()
    local processes = new_finder(scene(), { procs = only(200),
      analyzers = { analyzer({ active = false }) } }):scan()
    assert.same({}, processes)
  end)
end)

describe("kube_finder.new", function()
  local function new_error(a)
    local f, err = finder.new({ analyzers = { a } }, fake_sys({}), fake_pod_index.new())
    assert.is_nil(f)
    return err
  end

  it("names the analyzer and field of a template that does not compile", function()
    assert.equal('process_discovery.kubernetes.analyzers[1]: service_name "{{.Pod.Nme}}": service_name:1:3: '
      .. "unknown field .Pod.Nme", new_error(analyzer({ service_name = "{{.Pod.Nme}}" })))
    assert.equal('process_discovery.kubernetes.analyzers[1]: filters[1] ".Rover.HostName": filters[1]:1:3: '
      .. "unknown field .Rover", new_error(analyzer({ filters = { ".Rover.HostName" } })))
    assert.equal('process_discovery.kubernetes.analyzers[1]: instance_name "{{.Pod.HasServiceName}}": '
      .. "instance_name:1:3: unknown field .Pod.HasServiceName",
      new_error(analyzer({ instance_name = "{{.Pod.HasServiceName}}" })))
  end)

  it("needs a layer, the three names and non-empty filters", function()
    assert.equal("process_discovery.kubernetes.analyzers[1]: layer: missing", new_error(analyzer({ layer = "" })))
    assert.equal("process_discovery.kubernetes.analyzers[1]: process_name: missing",
      new_error(analyzer({ process_name = "" })))
    assert.equal("process_discovery.kubernetes.analyzers[1]: filters[1]: empty",
      new_error(analyzer({ filters = { "" } })))
  end)

  it("reads the analyzers of the configuration file, off unless active", function()
    assert.same({ { active = false, filters = {}, layer = "MESH", service_name = "s", instance_name = "i",
      process_name = "p", labels = "a,b" } },
      finder.analyzers({ { filters = {}, layer = "MESH", service_name = "s", instance_name = "i",
        process_name = "p", labels = "a,b" } }))
    assert.is_true(DEFAULTS[1].active)
  end)
end)
