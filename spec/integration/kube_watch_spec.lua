-- kube_watch_spec.lua - the Kubernetes client's list+watch
-- (runtime/kube/kube_watch.c) against the stand-in API server: the pods of
-- its node (per namespace or all) and every service listed then watched,
-- their changes in the change log, 410 Gone, dropped watches and a server
-- down for a while, the status counters, and a cursor the log no longer
-- keeps.
local rt = require("moonrover.rt").with_test_api()
local e2e = require("support.e2e")
local kube_api = require("support.kube_api")
local kube_view = require("support.kube_view")

local function pod(namespace, name, node)
  return kube_api.pod({ namespace = namespace, name = name, node = node or "node-a",
    containers = { { name = "app" } } })
end

local function is_watch(r)
  return r.query.watch == "1"
end

describe("Kubernetes client list and watch", function()
  local stub, feed

  before_each(function()
    stub = assert(kube_api.start({ node = "node-a" }))
  end)

  after_each(function()
    if feed then
      feed:close()
      feed = nil
    end
    stub:stop()
    e2e.rmdir(stub.dir)
  end)

  it("lists then watches the node's pods and every service, with the API server's query", function()
    assert(stub:add_pod(pod("shop", "cart-1")))
    assert(stub:add_pod(pod("shop", "elsewhere", "node-b")))
    assert(stub:add_service(kube_api.service({ namespace = "shop", name = "cart", selector = { app = "cart" } })))
    assert(stub:add_service(kube_api.service({ namespace = "web", name = "front", selector = { app = "front" } })))
    feed = assert(kube_view.open(stub))
    assert(feed:check_node(5000))
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "no SYNCED for both kinds")
    assert.same({ "shop/cart-1" }, view:names("pod"))
    assert.same({ "shop/cart", "web/front" }, view:names("service"))
    assert(stub:wait_watches(2), "the client did not watch both kinds")

    local pods = stub:requests(function(r) return r.path == "/api/v1/pods" end)
    assert.same({ fieldSelector = "spec.nodeName=node-a", limit = "500" }, pods[1].query)
    local watch = stub:requests(function(r) return is_watch(r) and r.path == "/api/v1/pods" end)[1]
    assert.equals("spec.nodeName=node-a", watch.query.fieldSelector)
    assert.equals("true", watch.query.allowWatchBookmarks)
    assert.matches("^%d+$", watch.query.resourceVersion)
    local svc = stub:requests(function(r) return is_watch(r) and r.path == "/api/v1/services" end)[1]
    assert.is_nil(svc.query.fieldSelector)

    assert(stub:add_pod(pod("shop", "cart-2")))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-2"] end), "no ADDED for cart-2")
    local changed = pod("shop", "cart-2")
    changed.metadata.labels = { app = "cart", rev = "2" }
    assert(stub:add_pod(changed))
    assert(view:wait(function(v) return v.last.type == "MODIFIED" end), "no MODIFIED")
    assert.equals("2", view.objects.pod["shop/cart-2"].metadata.labels.rev)
    assert(stub:delete_pod("shop", "cart-2"))
    assert(view:wait(function(v) return v.last.type == "DELETED" end), "no DELETED")
    assert.same({ "shop/cart-1" }, view:names("pod"))
    assert.is_nil(view.objects.pod["shop/cart-1"].metadata.managedFields)
    local st = feed:status()
    assert.is_true(st.connected and st.pods_synced and st.services_synced)
    assert.same({ 2, 1, 2 }, { st.lists, st.objects_pods, st.objects_services })
    assert.is_true(st.events >= 3)
  end)

  it("watches only the namespaces asked for", function()
    assert(stub:add_pod(pod("shop", "cart-1")))
    assert(stub:add_pod(pod("web", "front-1")))
    assert(stub:add_pod(pod("other", "x-1")))
    feed = assert(kube_view.open(stub, { namespaces = "shop,web" }))
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert.same({ "shop/cart-1", "web/front-1" }, view:names("pod"))
    assert(stub:add_pod(pod("other", "x-2")))
    assert(stub:add_pod(pod("web", "front-2")))
    assert(view:wait(function(v) return v.objects.pod["web/front-2"] end), "no ADDED for web/front-2")
    assert.is_nil(view.objects.pod["other/x-2"])
    local paths = {}
    for _, r in ipairs(stub:requests(function(r) return not is_watch(r) and r.path:match("pods$") end)) do
      paths[#paths + 1] = r.path
    end
    table.sort(paths)
    assert.same({ "/api/v1/namespaces/shop/pods", "/api/v1/namespaces/web/pods" }, paths)
  end)
end)
