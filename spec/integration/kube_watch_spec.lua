-- kube_watch_spec.lua - the Kubernetes client's list+watch
-- (runtime/kube/kube_watch.c) against the stand-in API server: the pods of
-- its node (per namespace or all) and every service listed then watched,
-- their changes in the change log, 410 Gone, dropped watches and a server
-- down for a while, the status counters, and a cursor the log no longer
-- keeps.
local rt = require("moonrover.rt").with_test_api()
local clock = require("support.clock")
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
  local case = kube_view.each_case(before_each, after_each)

  it("lists then watches the node's pods and every service, with the API server's query", function()
    assert(case.stub:add_pod(pod("shop", "cart-1")))
    assert(case.stub:add_pod(pod("shop", "elsewhere", "node-b")))
    assert(case.stub:add_service(kube_api.service({ namespace = "shop", name = "cart", selector = { app = "cart" } })))
    assert(case.stub:add_service(kube_api.service({ namespace = "web", name = "front", selector = { app = "front" } })))
    local feed = assert(case:open())
    assert(feed:check_node(5000))
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "no SYNCED for both kinds")
    assert.same({ "shop/cart-1" }, view:names("pod"))
    assert.same({ "shop/cart", "web/front" }, view:names("service"))
    assert(case.stub:wait_watches(2), "the client did not watch both kinds")

    local pods = case.stub:requests(function(r) return r.path == "/api/v1/pods" end)
    assert.same({ fieldSelector = "spec.nodeName=node-a", limit = "500" }, pods[1].query)
    local watch = case.stub:requests(function(r) return is_watch(r) and r.path == "/api/v1/pods" end)[1]
    assert.equals("spec.nodeName=node-a", watch.query.fieldSelector)
    assert.equals("true", watch.query.allowWatchBookmarks)
    assert.matches("^%d+$", watch.query.resourceVersion)
    local svc = case.stub:requests(function(r) return is_watch(r) and r.path == "/api/v1/services" end)[1]
    assert.is_nil(svc.query.fieldSelector)

    assert(case.stub:add_pod(pod("shop", "cart-2")))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-2"] end), "no ADDED for cart-2")
    local changed = pod("shop", "cart-2")
    changed.metadata.labels = { app = "cart", rev = "2" }
    assert(case.stub:add_pod(changed))
    assert(view:wait(function(v) return v.last.type == "MODIFIED" end), "no MODIFIED")
    assert.equals("2", view.objects.pod["shop/cart-2"].metadata.labels.rev)
    assert(case.stub:delete_pod("shop", "cart-2"))
    assert(view:wait(function(v) return v.last.type == "DELETED" end), "no DELETED")
    assert.same({ "shop/cart-1" }, view:names("pod"))
    assert.is_nil(view.objects.pod["shop/cart-1"].metadata.managedFields)
    local st = feed:status()
    assert.is_true(st.connected and st.pods_synced and st.services_synced)
    assert.same({ 2, 1, 2 }, { st.lists, st.objects_pods, st.objects_services })
    assert.is_true(st.events >= 3)
  end)

  it("watches only the namespaces asked for", function()
    assert(case.stub:add_pod(pod("shop", "cart-1")))
    assert(case.stub:add_pod(pod("web", "front-1")))
    assert(case.stub:add_pod(pod("other", "x-1")))
    local feed = assert(case:open({ namespaces = "shop, web," }))
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert.same({ "shop/cart-1", "web/front-1" }, view:names("pod"))
    assert(case.stub:add_pod(pod("other", "x-2")))
    assert(case.stub:add_pod(pod("web", "front-2")))
    assert(view:wait(function(v) return v.objects.pod["web/front-2"] end), "no ADDED for web/front-2")
    assert.is_nil(view.objects.pod["other/x-2"])
    local paths = {}
    for _, r in ipairs(case.stub:requests(function(r) return not is_watch(r) and r.path:match("pods$") end)) do
      paths[#paths + 1] = r.path
    end
    table.sort(paths)
    assert.same({ "/api/v1/namespaces/shop/pods", "/api/v1/namespaces/web/pods" }, paths)
  end)

  it("lists in pages, each asking for the next with continue", function()
    for i = 1, 5 do
      assert(case.stub:add_pod(pod("shop", "cart-" .. i)))
    end
    local feed = assert(case:open())
    rt.lib.mr_kube_set_limits(feed.k, 0, 2)
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert.same({ "shop/cart-1", "shop/cart-2", "shop/cart-3", "shop/cart-4", "shop/cart-5" }, view:names("pod"))
    local pages = case.stub:requests(function(r) return r.path == "/api/v1/pods" and not is_watch(r) end)
    assert.equals(3, #pages)
    assert.same({ "2", "2", "2" }, { pages[1].query.limit, pages[2].query.limit, pages[3].query.limit })
    assert.is_nil(pages[1].query.continue)
    assert.is_string(pages[2].query.continue)
    assert.is_string(pages[3].query.continue)
    assert.equals(2, feed:status().lists, "pages counted as lists")
  end)

  -- A started client with pods shop/cart-1 and shop/cart-2, synced; its view.
  local function synced_client()
    assert(case.stub:add_pod(pod("shop", "cart-1")))
    assert(case.stub:add_pod(pod("shop", "cart-2")))
    local feed = assert(case:open())
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert(case.stub:wait_watches(2), "the client did not watch both kinds")
    return view
  end

  it("lists again after 410 Gone, and what changed meanwhile comes out right", function()
    local view = synced_client()
    local feed = view.feed
    -- Refused while the token is another, the client sees nothing of what
    -- happens then; the version it watched is compacted away meanwhile.
    assert(case.stub:set_token("elsewhere"))
    assert(case.stub:drop_watches())
    assert(view:wait(function() return feed:status().errors > 0 end), "no 401 counted")
    assert(case.stub:delete_pod("shop", "cart-1"))
    assert(case.stub:add_pod(pod("shop", "cart-3")))
    assert(case.stub:compact())
    assert(case.stub:set_token(case.stub.first_token))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-3"] and not v.objects.pod["shop/cart-1"] end),
      "the re-list did not bring the changes: " .. table.concat(view:names("pod"), " "))
    assert.same({ "shop/cart-2", "shop/cart-3" }, view:names("pod"))
    local st = feed:status()
    assert.is_true(st.relists_gone >= 1, "relists_gone " .. st.relists_gone)
    assert.is_true(st.lists >= 3, "lists " .. st.lists)
    assert.matches("401", st.last_error)
  end)

  it("resumes a dropped watch from where it was, and a bookmark moves that point", function()
    local view = synced_client()
    local feed = view.feed
    assert(case.stub:drop_watches({ reset = true }))
    assert(case.stub:wait_watches(2), "the watches did not resume")
    assert(case.stub:add_pod(pod("shop", "cart-4")))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-4"] end), "no ADDED after the drop")
    local st = feed:status()
    assert.is_true(st.watch_drops >= 2, "watch_drops " .. st.watch_drops)
    assert.equals(2, st.lists)

    local before = #view.types
    assert(case.stub:add_pod(pod("shop", "far", "node-b")))
    local rv = assert(case.stub:state()).resourceVersion
    assert(case.stub:bookmark())
    assert(case.stub:drop_watches())
    assert(case.stub:wait_watches(2), "the watches did not resume after the bookmark")
    local last = case.stub:requests(function(r) return is_watch(r) and r.path == "/api/v1/pods" end)
    assert.equals(tostring(rv), last[#last].query.resourceVersion)
    assert.equals(before, #view:update().types, "a bookmark made a change record")
  end)

  it("waits out an API server that is down, then resumes", function()
    local view = synced_client()
    local feed = view.feed
    case.stub:kill()
    assert(view:wait(function() return not feed:status().connected end), "still connected to a killed server")
    assert(case.stub:start())
    assert(case.stub:wait_watches(2), "the watches did not resume")
    assert(case.stub:add_pod(pod("shop", "cart-5")))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-5"] end), "no ADDED after the restart")
    local st = feed:status()
    assert.is_true(st.connected)
    assert.is_true(st.errors >= 1 and st.watch_drops >= 2, "errors " .. st.errors .. ", drops " .. st.watch_drops)
    assert.matches("cannot reach the API server", st.last_error)
  end)

  it("answers RESET and every current object to a cursor the log no longer keeps", function()
    for i = 1, 5 do
      assert(case.stub:add_pod(pod("shop", "cart-" .. i)))
    end
    local feed = assert(case:open())
    rt.lib.mr_kube_set_limits(feed.k, 2, 0)
    assert(feed:start())
    -- The log is read once both kinds are in: by then it was trimmed.
    assert(clock.wait_for(function()
      local st = feed:status()
      return st.pods_synced and st.services_synced
    end, kube_view.WAIT_S), "not synced")
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert.equals("RESET", view.types[1])
    assert.same({ "shop/cart-1", "shop/cart-2", "shop/cart-3", "shop/cart-4", "shop/cart-5" }, view:names("pod"))
    assert(case.stub:delete_pod("shop", "cart-5"))
    assert(view:wait(function(v) return v.last.type == "DELETED" end), "no DELETED after the RESET")
    local resets = 0
    for _, t in ipairs(view.types) do
      resets = resets + (t == "RESET" and 1 or 0)
    end
    assert.equals(1, resets, "a cursor kept up with got a RESET")
  end)
end)
