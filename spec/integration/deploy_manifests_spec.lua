-- Integration spec of the Kubernetes manifests (deploy/kubernetes): their
-- shape, read with lua-yaml (the DaemonSet's host access, mounts, environment,
-- probe, scrape annotations and resources; the RBAC rules discovery needs; the
-- ConfigMap being configs/rover_configs.yaml), then kubectl's own reading of
-- them, offline: `kubectl kustomize` and `kubectl create --dry-run=client`.
local lyaml = require("lyaml")
local discovery = require("support.kubectl_offline")
local e2e = require("support.e2e")
local files = require("support.files")

local source = os.getenv("MOONROVER_SOURCE_DIR") or "."
local dir = source .. "/deploy/kubernetes"

local function kubectl_reason()
  local code = e2e.run("command -v kubectl")
  if code ~= 0 then
    return "kubectl is not on PATH (scripts/setup.sh installs Debian's kubernetes-client)"
  end
  return nil
end
local it_kubectl = require("support.skip").guard(it, pending, kubectl_reason())

local function load(path)
  local text = assert(files.read(path), path)
  return lyaml.load(text)
end

local kustomization = load(dir .. "/kustomization.yaml")
-- kind -> the one object of that kind, and the objects in kustomization order
local by_kind, objects = {}, {}
for _, file in ipairs(kustomization.resources) do
  local object = load(dir .. "/" .. file)
  assert(not by_kind[object.kind], "two objects of kind " .. object.kind)
  by_kind[object.kind] = object
  objects[#objects + 1] = object
end

local daemonset = by_kind.DaemonSet
local pod = daemonset.spec.template.spec
local container = pod.containers[1]

local function by_name(list, name)
  for _, item in ipairs(list or {}) do
    if item.name == name then
      return item
    end
  end
  return nil
end

local function env_value(name)
  local var = by_name(container.env, name)
  return var and var.value
end

-- The mount of container at path, and the volume it mounts.
local function mount_at(path)
  for _, mount in ipairs(container.volumeMounts) do
    if mount.mountPath == path then
      return mount, by_name(pod.volumes, mount.name)
    end
  end
  return nil
end

describe("the Kubernetes manifests", function()
  it("are one object a file, namespaced ones in the moonrover namespace", function()
    assert.same({ "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet" },
      require("support.tables").pluck(objects, "kind"))
    local namespace = by_kind.Namespace.metadata.name
    for _, kind in ipairs({ "ServiceAccount", "ConfigMap", "DaemonSet" }) do
      assert.same(namespace, by_kind[kind].metadata.namespace, kind)
    end
  end)

  it("run the agent on the host's pids, privileged, on every node, under its service account", function()
    assert.is_true(pod.hostPID)
    assert.is_true(container.securityContext.privileged)
    assert.same(by_kind.ServiceAccount.metadata.name, pod.serviceAccountName)
    assert.same({ { operator = "Exists" } }, pod.tolerations)
    assert.same(daemonset.spec.selector.matchLabels, daemonset.spec.template.metadata.labels)
  end)

  it("mount debugfs, tracefs and the BPF file system from the host at their own paths", function()
    for _, path in ipairs({ "/sys/kernel/debug", "/sys/kernel/tracing", "/sys/fs/bpf" }) do
      local mount, volume = mount_at(path)
      assert.is_truthy(mount, path)
      assert.is_falsy(mount.readOnly, path)
      assert.same({ path = path, type = "Directory" }, volume.hostPath, path)
    end
  end)

  it("mount the host's /proc read-only where ROVER_HOST_PROC_MAPPING says", function()
    local mapping = env_value("ROVER_HOST_PROC_MAPPING")
    assert.is_truthy(mapping)
    local mount, volume = mount_at(mapping)
    assert.is_truthy(mount, mapping)
    assert.is_true(mount.readOnly)
    assert.same({ path = "/proc", type = "Directory" }, volume.hostPath)
  end)

  it("give Kubernetes discovery the node's name from the downward API", function()
    assert.same("true", env_value("ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE"))
    local node = by_name(container.env, "ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME")
    assert.same({ fieldRef = { fieldPath = "spec.nodeName" } }, node.valueFrom)
  end)

  it("set only variables the configuration reads", function()
    local config = assert(files.read(source .. "/configs/rover_configs.yaml"))
    for _, var in ipairs(container.env) do
      if var.name ~= "ROVER_HOST_PROC_MAPPING" then
        assert.is_truthy(config:find("${" .. var.name .. ":", 1, true), var.name)
      end
    end
  end)

  it("read the configuration from the ConfigMap, which is configs/rover_configs.yaml", function()
    local config = assert(files.read(source .. "/configs/rover_configs.yaml"))
    assert.same(config, by_kind.ConfigMap.data["rover_configs.yaml"],
      "deploy/kubernetes/configmap.yaml has another copy of configs/rover_configs.yaml: copy it again")
    local file = container.args[#container.args]
    assert.same({ "agent", "--config", file }, container.args)
    local mount, volume = mount_at(file:match("^(.*)/[^/]+$"))
    assert.is_true(mount.readOnly)
    assert.same(by_kind.ConfigMap.metadata.name, volume.configMap.name)
  end)

  it("serve /healthz to the readiness probe and /metrics to Prometheus on the agent's port", function()
    local port = by_name(container.ports, container.readinessProbe.httpGet.port)
    assert.is_truthy(port, "the probe names a port of the container")
    assert.same("/healthz", container.readinessProbe.httpGet.path)
    assert.same("0.0.0.0:" .. port.containerPort, env_value("MOONROVER_AGENT_HTTP"))
    assert.same({ ["prometheus.io/scrape"] = "true", ["prometheus.io/port"] = tostring(port.containerPort),
      ["prometheus.io/path"] = "/metrics" }, daemonset.spec.template.metadata.annotations)
  end)

  it("request less than they limit, CPU and memory both", function()
    local units = { m = 1e-3, Mi = 2 ^ 20, Gi = 2 ^ 30 }
    local function amount(s)
      local n, unit = tostring(s):match("^([%d.]+)(%a*)$")
      return tonumber(n) * (unit == "" and 1 or assert(units[unit], s))
    end
    for _, what in ipairs({ "cpu", "memory" }) do
      local request, limit = container.resources.requests[what], container.resources.limits[what]
      assert.is_truthy(request and limit, what)
      assert.is_true(amount(request) <= amount(limit), what)
    end
  end)

  it("let the service account get, list and watch pods, services, nodes and the owners' kinds", function()
    local wanted = {
      [""] = { "pods", "services", "nodes" },
      apps = { "replicasets", "deployments", "statefulsets", "daemonsets" },
      batch = { "jobs", "cronjobs" },
    }
    local granted = {}
    for _, rule in ipairs(by_kind.ClusterRole.rules) do
      assert.same({ "get", "list", "watch" }, rule.verbs)
      for _, group in ipairs(rule.apiGroups) do
        granted[group] = granted[group] or {}
        for _, resource in ipairs(rule.resources) do
          table.insert(granted[group], resource)
        end
      end
    end
    assert.same(wanted, granted)
    local binding = by_kind.ClusterRoleBinding
    assert.same({ apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole",
      name = by_kind.ClusterRole.metadata.name }, binding.roleRef)
    assert.same({ { kind = "ServiceAccount", name = by_kind.ServiceAccount.metadata.name,
      namespace = by_kind.ServiceAccount.metadata.namespace } }, binding.subjects)
  end)

  it_kubectl("build with kubectl kustomize into the same objects", function()
    local code, out, err = e2e.run("kubectl kustomize " .. e2e.quote(dir))
    assert.same(0, code, err)
    local built = lyaml.load(out, { all = true })
    local built_by_kind = {}
    for _, object in ipairs(built) do
      built_by_kind[object.kind] = object
    end
    assert.same(by_kind, built_by_kind)
  end)

  it_kubectl("decode with kubectl create --dry-run=client, and an unknown kind is refused", function()
    local tmp = e2e.tmpdir()
    discovery.write_cache(tmp .. "/cache")
    local function dry_run(paths)
      local words = { "kubectl", "--server=" .. discovery.server, "--token=offline",
        "--cache-dir=" .. e2e.quote(tmp .. "/cache"), "create", "--dry-run=client", "--validate=false", "-o", "yaml" }
      for _, path in ipairs(paths) do
        words[#words + 1] = "-f " .. e2e.quote(path)
      end
      return e2e.run(table.concat(words, " ") .. " </dev/null")
    end
    local paths = {}
    for i, file in ipairs(kustomization.resources) do
      paths[i] = dir .. "/" .. file
    end
    local code, out, err = dry_run(paths)
    local created = lyaml.load(out, { all = true })
    local wrong = tmp .. "/wrong.yaml"
    files.write(wrong, (files.read(dir .. "/daemonset.yaml"):gsub("kind: DaemonSet", "kind: DaemonJob")))
    local wrong_code, _, wrong_err = dry_run({ wrong })
    e2e.rmdir(tmp)
    assert.same(0, code, err)
    local items = created[1].kind == "List" and created[1].items or created
    assert.same(objects, items)
    assert.are_not.same(0, wrong_code)
    assert.matches("unable to recognize", wrong_err, 1, true)
  end)
end)
