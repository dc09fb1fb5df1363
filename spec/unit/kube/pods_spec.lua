-- pods_spec.lua - the pod index over a fake feed: containers by id with
-- their runtime prefixes stripped, services by Rover's selection rule,
-- owner walks through the API, RESET and DELETED.
local kube_feed = require("support.kube_feed")
local objects = require("support.kube.objects")
local pods = require("moonrover.kube.pods")

local function id(c)
  return string.rep(c, 64)
end

local function pod(opts)
  return objects.pod(opts)
end

describe("the pod index", function()
  local feed, index
  before_each(function()
    feed = kube_feed.new()
    index = pods.new(feed)
  end)

  it("finds a pod by any container id, whatever the runtime's prefix", function()
    local p = feed:add("pod", pod({ name = "web-1", namespace = "shop", containers = {
      { name = "app", id = id("a"), runtime = "containerd" }, { name = "proxy", id = id("b"), runtime = "cri-o" },
      { name = "log", id = id("c"), runtime = "docker" } } }))
    index:update()
    for c, name in pairs({ a = "app", b = "proxy", c = "log" }) do
      local found, status = index:container(id(c))
      assert.equal(p, found)
      assert.equal(name, status.name)
    end
    assert.equal(p, (index:container("containerd://" .. id("A"))))
    assert.is_nil(index:container(id("d")))
    assert.equal("app", pods.spec_container(p, "app").name)
    assert.is_nil(index.spec_container(p, "nope"))
  end)

  it("indexes init containers too", function()
    local p = pod({ name = "job-1", containers = { { name = "main", id = id("1") } } })
    p.spec.initContainers = { { name = "setup", image = "busybox" } }
    p.status.initContainerStatuses = { { name = "setup", containerID = "containerd://" .. id("2") } }
    feed:add("pod", p)
    index:update()
    local found, status = index:container(id("2"))
    assert.equal(p, found)
    assert.equal("setup", status.name)
    assert.equal("busybox", pods.spec_container(p, "setup").image)
  end)

  it("leaves out containers that have no id yet, and follows a pod's new ids", function()
    local p = pod({ name = "web-1", containers = { { name = "app", id = id("a") } } })
    p.status.containerStatuses[1].containerID = nil
    feed:add("pod", p)
    index:update()
    assert.is_nil(index:container(id("a")))
    local q = pod({ name = "web-1", containers = { { name = "app", id = id("e") } } })
    q.metadata.uid = p.metadata.uid
    feed:modify("pod", q)
    index:update()
    assert.equal(q, (index:container(id("e"))))
  end)

  it("says when pods and services have both been listed", function()
    feed:synced("pod")
    index:update()
    assert.is_false(index:synced())
    feed:synced("service")
    index:update()
    assert.is_true(index:synced())
  end)

  describe("names a pod's service", function()
    local p
    before_each(function()
      p = feed:add("pod", pod({ name = "cart-1", namespace = "shop", labels = { app = "cart", tier = "web" },
        containers = { { name = "cart", id = id("a") } } }))
    end)

    local function service(name, namespace, selector)
      return feed:add("service", objects.service({ name = name, namespace = namespace, selector = selector }))
    end

    it("by the services of its namespace whose selector matches all its labels", function()
      service("cart", "shop", { app = "cart" })
      index:update()
      assert.equal("cart", index:service_name(p))
    end)

    it("with ties going to the shortest name, then the first in byte order", function()
      service("cart-web", "shop", { app = "cart", tier = "web" })
      service("zeta", "shop", { app = "cart" })
      service("beta", "shop", { tier = "web" })
      service("cart-long-name", "shop", { app = "cart" })
      index:update()
      assert.equal("beta", index:service_name(p))
    end)

    it("never by an empty selector, another namespace's service or a label that differs", function()
      service("all", "shop", nil)
      service("empty", "shop", {})
      service("cart", "other", { app = "cart" })
      service("mismatch", "shop", { app = "cart", tier = "db" })
      index:update()
      assert.is_nil(index:service_name(p))
    end)

    it("and forgets a service deleted", function()
      local s = service("cart", "shop", { app = "cart" })
      index:update()
      feed:delete("service", s)
      index:update()
      assert.is_nil(index:service_name(p))
    end)
  end)

  describe("walks a pod's owners", function()
    it("from a ReplicaSet to its Deployment, pending while they are fetched", function()
      local rs = feed:put_owners("shop", { { "Deployment", "cart" }, { "ReplicaSet", "cart-7d9" } })
      local p = feed:add("pod", pod({ name = "cart-7d9-x2", namespace = "shop", owner = rs,
        containers = { { name = "cart", id = id("a") } } }))
      index:update()
      assert.same({ nil, "pending" }, { index:owners(p) })
      feed:release("/apis/apps/v1/namespaces/shop/replicasets/cart-7d9")
      assert.same({ nil, "pending" }, { index:owners(p) })
      feed:release()
      local want = { { kind = "ReplicaSet", name = "cart-7d9" }, { kind = "Deployment", name = "cart" } }
      assert.same(want, index:owners(p))
      local asked = feed.gets["/apis/apps/v1/namespaces/shop/deployments/cart"]
      assert.same(want, index:owners(p))
      assert.equal(asked, feed.gets["/apis/apps/v1/namespaces/shop/deployments/cart"])
    end)

    it("from a Job to its CronJob", function()
      local job = feed:put_owners("ops", { { "CronJob", "backup" }, { "Job", "backup-28911440" } })
      local p = feed:add("pod", pod({ name = "backup-28911440-abcde", namespace = "ops", owner = job,
        containers = { { name = "backup", id = id("b") } } }))
      index:update()
      feed:release()
      assert.same({ { kind = "Job", name = "backup-28911440" }, { kind = "CronJob", name = "backup" } },
        index:owners(p))
    end)

    it("stopping at an owner that no longer exists, and giving {} for a pod nobody owns", function()
      local gone = objects.owner({ kind = "ReplicaSet", namespace = "shop", name = "old-1" })
      gone.metadata.uid = feed:uid()
      local p = feed:add("pod", pod({ name = "old-1-x", namespace = "shop", owner = gone,
        containers = { { name = "c", id = id("c") } } }))
      local lone = feed:add("pod", pod({ name = "lone", namespace = "shop", containers = { { name = "c",
        id = id("d") } } }))
      index:update()
      feed:release("/apis/apps/v1/namespaces/shop/replicasets/old-1")
      assert.same({ { kind = "ReplicaSet", name = "old-1" } }, index:owners(p))
      assert.same({}, index:owners(lone))
    end)
  end)

  it("drops what a RESET does not add again, and tells the pods' listeners", function()
    local seen = {}
    index:on_change(function(type, p)
      seen[#seen + 1] = type .. " " .. p.metadata.name
    end)
    local kept = feed:add("pod", pod({ name = "kept", containers = { { name = "c", id = id("a") } } }))
    feed:add("pod", pod({ name = "gone", containers = { { name = "c", id = id("b") } } }))
    local svc = feed:add("service", objects.service({ name = "svc", selector = { app = "x" } }))
    feed:add("service", objects.service({ name = "old", selector = { app = "x" } }))
    kept.metadata.labels = { app = "x" }
    index:update()
    assert.equal("old", index:service_name(kept))
    feed:reset({ { "pod", kept }, { "service", svc } })
    index:update()
    assert.equal(kept, (index:container(id("a"))))
    assert.is_nil(index:container(id("b")))
    assert.equal("svc", index:service_name(kept))
    assert.same({ "ADDED kept", "ADDED gone", "MODIFIED kept", "DELETED gone" }, seen)
    local names = {}
    for p in index:each_pod() do
      names[#names + 1] = p.metadata.name
    end
    assert.same({ "kept" }, names)
  end)

  it("forgets a pod DELETED, with its containers", function()
    local p = feed:add("pod", pod({ name = "web", containers = { { name = "c", id = id("a") } } }))
    index:update()
    feed:delete("pod", p)
    index:update()
    assert.is_nil(index:container(id("a")))
    assert.is_nil(index:each_pod()())
  end)
end)
