-- Specs for net/coroot_container.lua (coroot-style container ids from
-- /proc/PID/cgroup texts as the host sees them, for each runtime, cgroup
-- driver and version; the resolver's cache) and lib/cgroup.lua under it.
local cgroup = require("moonrover.lib.cgroup")
local container_id = require("moonrover.net.coroot_container")
local recorder = require("support.metrics_recorder")

local ID = "3f7a1c2b9d8e4f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718"
local POD = "pod8d5b1e2a-6c7f-4b8e-9a0d-1f2e3c4d5b6a"
local POD_SLICE = "kubepods-burstable-pod8d5b1e2a_6c7f_4b8e_9a0d_1f2e3c4d5b6a.slice"

-- A cgroup v1 file (Debian 10 with systemd): every controller in path, the
-- others at the root, name=systemd in the systemd path.
local function v1(path, systemd_path)
  return table.concat({
    "12:perf_event:/",
    "11:devices:" .. path,
    "10:freezer:/",
    "9:hugetlb:/",
    "8:cpuset:/",
    "7:cpu,cpuacct:" .. path,
    "6:net_cls,net_prio:/",
    "5:memory:" .. path,
    "4:blkio:" .. path,
    "3:pids:" .. path,
    "2:rdma:/",
    "1:name=systemd:" .. (systemd_path or path),
    "0::/",
  }, "\n") .. "\n"
end

local function v2(path)
  return "0::" .. path .. "\n"
end

local function check(text, want)
  assert.equal(want, container_id.from_cgroup(text), text)
end

describe("net container_id.from_cgroup", function()
  it("names systemd services by their unit (v1 and v2)", function()
    check(v1("/system.slice/ssh.service"), "/system.slice/ssh.service")
    check(v2("/system.slice/nginx.service"), "/system.slice/nginx.service")
    check(v2("/system.slice/nginx.service/worker"), "/system.slice/nginx.service")
    check(v2("/system.slice/system-getty.slice/getty@tty1.service"), "/system.slice/system-getty.slice")
    check(v2("/system.slice/foo\\x2dbar.service"), "/system.slice/foo-bar.service")
    check(v2("/kube.slice/kubelet.service"), "/kube.slice/kubelet.service")
    check(v2("/runtime.slice/containerd.service"), "/runtime.slice/containerd.service")
  end)

  it("names docker containers by id (cgroupfs v1, systemd v2, from inside a cgroup namespace)", function()
    check(v1("/docker/" .. ID), "/docker/" .. ID)
    check(v2("/system.slice/docker-" .. ID .. ".scope"), "/docker/" .. ID)
    check(v2("/../../../../system.slice/docker-" .. ID .. ".scope"), "/docker/" .. ID)
    check(v2("/docker/" .. ID:upper()), "/docker/" .. ID)
  end)

  it("names Kubernetes containers of containerd by id (systemd v2, cgroupfs v1, kind)", function()
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/cri-containerd-" .. ID .. ".scope"),
      "/containerd/" .. ID)
    check(v1("/kubepods/burstable/" .. POD .. "/" .. ID), "/containerd/" .. ID)
    check(v1("/kubepods/besteffort/" .. POD .. "/" .. ID, "/system.slice/containerd.service"), "/containerd/" .. ID)
    check(v2("/system.slice/containerd.service/" .. POD_SLICE .. ":cri-containerd:" .. ID), "/containerd/" .. ID)
  end)

  it("names CRI-O containers by id, and leaves CRI-O's conmon out", function()
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/crio-" .. ID .. ".scope"), "/crio/" .. ID)
    check(v1("/kubepods/burstable/" .. POD .. "/crio-" .. ID), "/crio/" .. ID)
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE .. "/crio-conmon-" .. ID .. ".scope"), false)
    check(v2("/system.slice/crio-conmon-" .. ID .. ".scope"), false)
  end)

  it("leaves out pod and docker cgroups that hold no container id", function()
    check(v2("/kubepods.slice/kubepods-burstable.slice/" .. POD_SLICE), false)
    check(v1("/docker/buildkit"), false)
  end)

  it("names podman containers, rootful and rootless, and leaves conmon out", function()
    check(v2("/machine.slice/libpod-" .. ID .. ".scope"), "/podman/" .. ID)
    check(v2("/machine.slice/libpod-" .. ID .. ".scope/container"), "/podman/" .. ID)
    check(v2("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" .. ID .. ".scope"), "/podman/" .. ID)
    check(v2("/machine.slice/libpod-conmon-" .. ID .. ".scope"), false)
  end)

  it("names LXC containers and Talos services", function()
    check(v1("/lxc/web1"), "/lxc/web1")
    check(v2("/lxc.payload.web1/system.slice/nginx.service"), "/lxc/web1")
    check(v2("/init"), "/talos/init")
    check(v2("/podruntime/runtime"), "/talos/runtime")
    check(v2("/system/apid"), "/talos/apid")
  end)

  it("puts host processes under /", function()
    check(v2("/user.slice/user-1000.slice/session-3.scope"), "/")
    check(v2("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope"), "/")
    check(v2("/init.scope"), "/")
    check(v1("/init.scope"), "/")
    check(v2("/system.slice/run-r2d5b3c4e.scope"), "/")
    check(v2("/"), "/")
    check(v1("/"), "/")
    check(v2("/custom"), "/")
  end)

  it("names cgroups of unknown layout by their path, systemd's \\x2d read as -", function()
    check(v2("/machine.slice/machine-qemu\\x2d1\\x2dvm.scope"), "/machine.slice/machine-qemu-1-vm.scope")
    check(v2("/ecs/0123456789abcdef0123456789abcdef/app"), "/ecs/0123456789abcdef0123456789abcdef/app")
    check(v2("/moonrover-spec/app/"), "/moonrover-spec/app")
    -- a sandbox's memory cgroup on a cgroup v1 host, every other path at the root
    local sandbox = "/process_api/0624c75485c9eb2d83dd108334b77951"
    check("9:name=systemd:/\n4:memory:" .. sandbox .. "\n1:cpu:/\n0::/\n", sandbox)
    check(v1(sandbox), sandbox)
  end)

  it("leaves out the parents of known layouts, which hold no process of their own", function()
    check(v2("/system"), false)
    check(v2("/system.slice"), false)
    check(v1("/lxc"), false)
  end)

  it("chooses the path as coroot does: kubepods in cpu or memory first, then v2, cpu, memory, name=systemd", function()
    check("5:memory:/kubepods/burstable/" .. POD .. "/" .. ID .. "\n0::/system.slice/kubelet.service\n",
      "/containerd/" .. ID)
    check("7:cpu,cpuacct:/system.slice/a.service\n0::/system.slice/b.service\n", "/system.slice/b.service")
    check("7:cpu,cpuacct:/system.slice/a.service\n5:memory:/system.slice/c.service\n", "/system.slice/a.service")
    check("1:name=systemd:/system.slice/python-app.service\n7:cpu,cpuacct:/\n", "/system.slice/python-app.service")
  end)
end)

describe("net container_id.host_layout", function()
  it("reads the layout from mountinfo and says it in one line", function()
    local layout, line = container_id.host_layout(function()
      return "25 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    end)
    assert.equal("unified", layout.kind)
    assert.equal("unified, cgroup v2 at /sys/fs/cgroup", line)
  end)

  it("says why when mountinfo cannot be read", function()
    assert.same({ nil, "cannot read /proc/1/mountinfo: Permission denied" }, { container_id.host_layout(function()
      return nil, "cannot read /proc/1/mountinfo: Permission denied"
    end) })
  end)
end)

describe("lib/cgroup", function()
  it("cleans paths as the kernel shows them outside the reader's namespace", function()
    assert.equal("/system.slice/x.service", cgroup.clean("/../../system.slice//./x.service/"))
    assert.equal("/", cgroup.clean("/.."))
  end)

  it("reads the lines of a cgroup file and skips what is not one", function()
    assert.same({
      { controllers = { "cpu", "cpuacct" }, path = "/a" },
      { controllers = { "" }, path = "/b:c" },
    }, cgroup.lines("7:cpu,cpuacct:/a\ngarbage\n0::/b:c\n"))
  end)
end)

describe("net container_id resolver", function()
  local reads, files

  local function resolver(opts)
    reads, files = {}, {}
    opts = opts or {}
    opts.read = function(pid)
      reads[#reads + 1] = pid
      if files[pid] then
        return files[pid]
      end
      return nil, "cannot read /proc/" .. pid .. "/cgroup: no such process"
    end
    return container_id.new(opts)
  end

  it("reads a pid's cgroup once and answers from the cache", function()
    local r = resolver()
    files[10] = v2("/system.slice/nginx.service")
    files[11] = v2("/kubepods.slice/" .. POD_SLICE .. "/crio-conmon-" .. ID .. ".scope")
    assert.equal("/system.slice/nginx.service", r:lookup(10, 1e9))
    assert.equal("/system.slice/nginx.service", r:lookup(10, 2e9))
    assert.equal(false, r:lookup(11, 2e9))
    assert.equal(false, r:lookup(11, 3e9))
    assert.same({ 10, 11 }, reads)
  end)

  it("reads again after ttl_ns, and after forget (the pid was reused)", function()
    local r = resolver({ ttl_ns = 10e9 })
    files[10] = v2("/system.slice/a.service")
    assert.equal("/system.slice/a.service", r:lookup(10, 1e9))
    files[10] = v2("/system.slice/b.service")
    assert.equal("/system.slice/a.service", r:lookup(10, 5e9))
    assert.equal("/system.slice/b.service", r:lookup(10, 12e9))
    files[10] = v2("/docker/" .. ID)
    r:forget(10)
    assert.equal("/docker/" .. ID, r:lookup(10, 13e9))
    assert.same({ 10, 10, 10 }, reads)
    assert.equal(1, r:stats().entries)
  end)

  it("says why when the file cannot be read, caches nothing and counts it", function()
    local reg = recorder.new()
    local r = resolver({ registry = reg })
    local id, err = r:lookup(99, 1e9)
    assert.is_nil(id)
    assert.equal("cannot read /proc/99/cgroup: no such process", err)
    r:lookup(99, 1e9)
    assert.same({ 99, 99 }, reads)
    assert.equal(2, r:stats().read_errors)
    assert.equal(2, reg:value("moonrover_net_container_id_errors_total"))
  end)

  it("keeps at most max_entries pids, keeping those looked up lately, and counts evictions", function()
    local reg = recorder.new()
    local r = resolver({ max_entries = 4, registry = reg })
    for pid = 1, 9 do
      files[pid] = v2("/system.slice/s" .. pid .. ".service")
    end
    for _, pid in ipairs({ 1, 2, 3, 1, 4, 5 }) do
      r:lookup(pid, 1e9)
    end
    -- 1 and 2 filled a generation; 3 started the next and 1 moved into it;
    -- 4 started a third, dropping 2 (not looked up since); 5 filled it
    assert.same({ entries = 4, evictions = 1, read_errors = 0 }, r:stats())
    assert.equal(1, reg:value("moonrover_net_container_cache_evictions_total"))
    reads = {}
    for _, pid in ipairs({ 4, 5, 2 }) do
      r:lookup(pid, 1e9)
    end
    assert.same({ 2 }, reads)
    for pid = 6, 9 do
      r:lookup(pid, 1e9)
    end
    assert.is_true(r:stats().entries <= 4)
  end)
end)

describe("net container_id's names of Kubernetes pods", function()
  local kube_feed = require("support.kube_feed")
  local objects = require("support.kube.objects")
  local pods = require("moonrover.kube.pods")
  local CRON_ID = string.rep("c", 64)

  -- A fake feed with the pod shop/cart-7d9f8b6c4-x2bzq (container "cart",
  -- ID, of a Deployment's ReplicaSet) and ops/backup-28911440-q7w2r (a
  -- CronJob's Job); a namer over an index of it, updated.
  local function scene()
    local feed = kube_feed.new()
    local rs = feed:put_owners("shop", { { "Deployment", "cart" }, { "ReplicaSet", "cart-7d9f8b6c4" } })
    feed:add("pod", objects.pod({ name = "cart-7d9f8b6c4-x2bzq", namespace = "shop", owner = rs,
      containers = { { name = "cart", id = ID } } }))
    local job = feed:put_owners("ops", { { "CronJob", "backup" }, { "Job", "backup-28911440" } })
    feed:add("pod", objects.pod({ name = "backup-28911440-q7w2r", namespace = "ops", owner = job,
      containers = { { name = "dump", id = CRON_ID, runtime = "cri-o" } } }))
    local index = pods.new(feed)
    index:update()
    return feed, index, container_id.pod_namer(index)
  end

  it("names a known pod's container /k8s/<namespace>/<pod>/<container>, whatever its runtime", function()
    local feed, _, names = scene()
    feed:release()
    for _, prefix in ipairs({ "/containerd/", "/crio/", "/docker/" }) do
      assert.equal("/k8s/shop/cart-7d9f8b6c4-x2bzq/cart", names:name(prefix .. ID))
    end
  end)

  it("names a CronJob's pods /k8s-cronjob/<namespace>/<cronjob>/<container> once its owners are known", function()
    local feed, _, names = scene()
    assert.equal("/k8s/ops/backup-28911440-q7w2r/dump", names:name("/crio/" .. CRON_ID))
    feed:release()
    assert.equal("/k8s-cronjob/ops/backup/dump", names:name("/crio/" .. CRON_ID))
  end)

  it("keeps every other id, and names a pod added later once the index has it", function()
    local feed, index, names = scene()
    feed:release()
    local later = string.rep("d", 64)
    for _, id in ipairs({ "/", "/system.slice/nginx.service", "/containerd/" .. later, false }) do
      assert.equal(id, names:name(id))
    end
    assert.is_nil(names:name(nil))
    feed:add("pod", objects.pod({ name = "web-0", namespace = "shop", containers = { { name = "web", id = later } } }))
    index:update()
    assert.equal("/k8s/shop/web-0/web", names:name("/containerd/" .. later))
  end)

  it("gives coroot's app_id: the workload of a Deployment's, DaemonSet's or StatefulSet's pod", function()
    local cases = {
      ["/k8s/shop/cart-7d9f8b6c4-x2bzq/cart"] = "/k8s/shop/cart",
      ["/k8s/shop/cart-api-5f9-x2bzq/cart"] = "/k8s/shop/cart-api",
      ["/k8s/kube-system/kube-proxy-x2bzq/kube-proxy"] = "/k8s/kube-system/kube-proxy",
      ["/k8s/db/postgres-12/postgres"] = "/k8s/db/postgres",
      ["/k8s/shop/cart-0123456789a-x2bzq/cart"] = "/k8s/shop/cart-0123456789a",
      ["/k8s/shop/lone/c"] = false,
      ["/k8s/shop/web.v2-0/c"] = false,
      ["/k8s-cronjob/ops/backup/dump"] = false,
      ["/containerd/" .. ID] = false,
      ["/"] = false,
    }
    for id, want in pairs(cases) do
      assert.equal(want or nil, container_id.app_id(id), id)
    end
    assert.is_nil(container_id.app_id(false))
  end)
end)
