-- Specs for the stand-in Kubernetes API server (spec/support/kube): curl
-- makes the requests a Kubernetes client makes, over HTTPS with the
-- stand-in's CA; the specs check the answers and what it recorded, through
-- spec/support/kube_api.lua.
local cjson = require("cjson")
local certs = require("support.kube.certs")
local clock = require("support.clock")
local e2e = require("support.e2e")
local kube_api = require("support.kube_api")

local TOKEN = "t0-spec"

-- The curl command line of one request (opts as get's below).
local function curl(stub, path, opts)
  local token = opts.token
  if token == nil then
    token = TOKEN
  end
  local words = { "curl -sS --cacert", e2e.quote(stub.ca), "-w '\\n%{http_code}'", "-X", opts.method or "GET" }
  if token then
    words[#words + 1] = "-H " .. e2e.quote("Authorization: Bearer " .. token)
  end
  if opts.cert then
    words[#words + 1] = "--cert " .. e2e.quote(opts.cert) .. " --key " .. e2e.quote(opts.key)
  end
  words[#words + 1] = e2e.quote("https://localhost:" .. stub.port .. path)
  return table.concat(words, " ")
end

-- One GET (or opts.method); returns the HTTP status, the decoded body and the body's text.
-- opts: token (default TOKEN; false: no Authorization header), method, cert and key (a client
-- certificate's files).
local function get(stub, path, opts)
  local code, out, err = e2e.run(curl(stub, path, opts or {}))
  assert(code == 0, "curl failed: " .. err)
  local body, status = out:match("^(.*)\n(%d+)$")
  return tonumber(status), cjson.decode(body), body
end

-- A GET that must succeed; its decoded body.
local function ok(stub, path, opts)
  local status, body = get(stub, path, opts)
  assert.equals(200, status, "GET " .. path)
  return body
end

-- A watch run by curl in the background, its raw chunked body kept in a file.
local Watch = {}
Watch.__index = Watch

local function watch(stub, path, token)
  local w = setmetatable({ file = os.tmpname(), exit_file = os.tmpname() }, Watch)
  os.remove(w.exit_file)
  os.execute(string.format("(curl -sS -N --raw --cacert %s -H %s %s >%s 2>/dev/null; echo $? >%s) &",
    e2e.quote(stub.ca), e2e.quote("Authorization: Bearer " .. (token or TOKEN)),
    e2e.quote("https://localhost:" .. stub.port .. path), e2e.quote(w.file), e2e.quote(w.exit_file)))
  return w
end

-- Waits for curl to end; its exit status (0: the stream ended with its last chunk).
function Watch:wait_end()
  local status = clock.wait_for(function() return tonumber(e2e.read_all(self.exit_file) or "") end, 15)
  assert(status, "the watch did not end")
  return status
end

-- The events received, decoded, checking that each chunk is one JSON line.
function Watch:events()
  local raw, out, pos = e2e.read_all(self.file) or "", {}, 1
  while true do
    local size, from = raw:match("^(%x+)\r\n()", pos)
    if not size or tonumber(size, 16) == 0 then
      break
    end
    local chunk = raw:sub(from, from + tonumber(size, 16) - 1)
    assert.matches("^{.*}\n$", chunk)
    out[#out + 1] = cjson.decode(chunk)
    pos = from + tonumber(size, 16) + 2
  end
  return out
end

-- Whether the body ended with the zero-length last chunk.
function Watch:ended_cleanly()
  return (e2e.read_all(self.file) or ""):sub(-5) == "0\r\n\r\n"
end

function Watch:remove()
  os.remove(self.file)
  os.remove(self.exit_file)
end

-- Each event as "TYPE name".
local function summary(events)
  local out = {}
  for i, ev in ipairs(events) do
    out[i] = ev.type .. " " .. tostring(ev.object.metadata and ev.object.metadata.name)
  end
  return out
end

local function pod(namespace, name, node, labels)
  return kube_api.pod({ namespace = namespace, name = name, node = node, labels = labels,
    containers = { { name = "app", ports = { 8080 } } } })
end

describe("stand-in Kubernetes API server", function()
  local stub

  before_each(function()
    stub = assert(kube_api.start({ token = TOKEN, node = "node-a" }))
  end)

  after_each(function()
    stub:stop()
    local err = stub:stderr()
    e2e.rmdir(stub.dir)
    assert.equals("", err, "the stand-in wrote to stderr")
  end)

  it("answers 401 with a Status without the token, with a wrong one and with the old one after rotation", function()
    local status, body = get(stub, "/api/v1/nodes/node-a", { token = false })
    assert.equals(401, status)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Failure", message = "Unauthorized",
      reason = "Unauthorized", code = 401 }, body)
    assert.equals(401, (get(stub, "/api/v1/pods", { token = "wrong" })))
    assert.equals(200, (get(stub, "/api/v1/nodes/node-a")))
    assert(stub:set_token("t1-spec"))
    assert.equals(401, (get(stub, "/api/v1/nodes/node-a")))
    assert.equals(200, (get(stub, "/api/v1/nodes/node-a", { token = "t1-spec" })))
    local seen = {}
    for i, r in ipairs(stub:requests()) do
      seen[i] = string.format("%s %s %s %d", r.method, r.path, tostring(r.authorized), r.code)
    end
    assert.same({ "GET /api/v1/nodes/node-a false 401", "GET /api/v1/pods false 401",
      "GET /api/v1/nodes/node-a true 200", "GET /api/v1/nodes/node-a false 401",
      "GET /api/v1/nodes/node-a true 200" }, seen)
  end)

  it("authorizes by a client certificate its CA signed with client_certs, and by it only then", function()
    assert.is_nil(stub.client_cert)
    local certed = assert(kube_api.start({ token = TOKEN, node = "node-a", client_certs = true }))
    local other_dir = e2e.tmpdir()
    local other = assert(certs.make(other_dir, { client = true }))
    local mine = { cert = certed.client_cert, key = certed.client_key }
    local status = get(certed, "/api/v1/nodes/node-a", { token = false, cert = mine.cert, key = mine.key })
    local wrong_token = get(certed, "/api/v1/nodes/node-a", { token = "wrong", cert = mine.cert, key = mine.key })
    local by_token = get(certed, "/api/v1/nodes/node-a")
    local neither = get(certed, "/api/v1/nodes/node-a", { token = false })
    local code = e2e.run(curl(certed, "/api/v1/nodes/node-a",
      { token = false, cert = other.client_cert, key = other.client_key }))
    local not_asked = get(stub, "/api/v1/nodes/node-a", { token = false, cert = mine.cert, key = mine.key })
    local seen = {}
    for i, r in ipairs(certed:requests()) do
      seen[i] = string.format("%s %s %d", tostring(r.authorized), tostring(r.auth), r.code)
    end
    certed:stop()
    local certed_err = certed:stderr()
    e2e.rmdir(certed.dir)
    e2e.rmdir(other_dir)
    assert.same({ 200, 200, 200, 401 }, { status, wrong_token, by_token, neither })
    assert.same({ "true certificate 200", "true certificate 200", "true token 200", "false nil 401" }, seen)
    -- curl's message varies (the alert, or the connection reset after it):
    -- the stand-in's own line says why it refused.
    assert.are_not.equal(0, code)
    assert.matches("kube_stub: a connection from 127.0.0.1:%d+ failed: .*CERTIFICATE_VERIFY_FAILED", certed_err)
    assert.equals(401, not_asked)
    assert.is_nil(stub:requests()[1].auth)
  end)

  it("gets a node, and answers 404 with a Status for an unknown one", function()
    local status, node, text = get(stub, "/api/v1/nodes/node-a")
    assert.equals(200, status)
    assert.matches('^{"kind": "Node", "apiVersion": "v1", "metadata": {.*}, "spec": {.*}, "status": {', text)
    assert.same({ "Node", "v1", "node-a" }, { node.kind, node.apiVersion, node.metadata.name })
    assert.matches("^%x+%-%x+%-%x+%-%x+%-%x+$", node.metadata.uid)
    assert.matches("^%d+$", node.metadata.resourceVersion)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", node.metadata.creationTimestamp)
    assert.equals("InternalIP", node.status.addresses[1].type)
    status, node = get(stub, "/api/v1/nodes/node-z")
    assert.equals(404, status)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Failure",
      message = 'nodes "node-z" not found', reason = "NotFound", details = { name = "node-z", kind = "nodes" },
      code = 404 }, node)
    assert.equals(404, (get(stub, "/api/v1/namespaces/default/nodes/node-a")))
    assert.equals(404, (get(stub, "/api/v1/secrets")))
    local status_405, refused = get(stub, "/api/v1/nodes/node-a", { method = "DELETE" })
    assert.same({ 405, "MethodNotAllowed" }, { status_405, refused.reason })
    assert.equals(401, (get(stub, "/api/v1/nodes/node-a", { method = "DELETE", token = false })))
    assert.equals(405, (get(stub, "/api/v1/nodes/node-a", { method = "OPTIONS" })))
    assert.equals(200, (get(stub, "/api/v1/nodes/node-a")))
  end)

  it("lists pods by node, namespace and labels, in pages of one resourceVersion", function()
    assert(stub:add_pod(pod("shop", "cart-1", "node-a", { app = "cart" })))
    assert(stub:add_pod(pod("shop", "pay-1", "node-b", { app = "pay" })))
    assert(stub:add_pod(pod("ads", "ads-1", "node-a", { app = "ads", tier = "web" })))
    assert(stub:add_pod(pod("shop", "cart-2", "node-a", { app = "cart" })))
    local status, list = get(stub, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a")
    assert.equals(200, status)
    assert.same({ "PodList", "v1" }, { list.kind, list.apiVersion })
    assert.equals(tostring(stub:state().resourceVersion), list.metadata.resourceVersion)
    local names = {}
    for i, item in ipairs(list.items) do
      names[i] = item.metadata.namespace .. "/" .. item.metadata.name
      assert.is_nil(item.kind)
      assert.matches("^containerd://%x+$", item.status.containerStatuses[1].containerID)
      assert.equals(64, #item.status.containerStatuses[1].containerID - #"containerd://")
    end
    assert.same({ "ads/ads-1", "shop/cart-1", "shop/cart-2" }, names)
    list = ok(stub, "/api/v1/namespaces/shop/pods?labelSelector=app%20in%20(cart,ads),app!=pay")
    assert.same({ "cart-1", "cart-2" }, { list.items[1].metadata.name, list.items[2].metadata.name })
    list = ok(stub, "/api/v1/pods?labelSelector=tier")
    assert.equals(1, #list.items)

    local pages, rvs, path = {}, {}, "/api/v1/pods?limit=2"
    repeat
      list = ok(stub, path)
      for _, item in ipairs(list.items) do
        pages[#pages + 1] = item.metadata.name
      end
      rvs[#rvs + 1] = list.metadata.resourceVersion
      if #rvs == 1 then
        assert.equals(2, list.metadata.remainingItemCount)
        assert(stub:add_pod(pod("aaa", "late-1", "node-a")))
      end
      path = "/api/v1/pods?limit=2&continue=" .. (list.metadata.continue or "")
    until not list.metadata.continue
    assert.same({ "ads-1", "cart-1", "cart-2", "pay-1" }, pages)
    assert.same({ rvs[1], rvs[1] }, rvs)

    status, list = get(stub, "/api/v1/pods?fieldSelector=spec.image%3Dx")
    assert.equals(400, status)
    assert.same({ "BadRequest", 400 }, { list.reason, list.code })
  end)

  it("lists services and gets the owners of a pod for owner walks", function()
    assert(stub:add_service(kube_api.service({ namespace = "shop", name = "cart", selector = { app = "cart" },
      ports = { 8080 } })))
    assert(stub:add_service(kube_api.service({ namespace = "ads", name = "ads", selector = { app = "ads" } })))
    local _, list = get(stub, "/api/v1/services")
    assert.same({ "ServiceList", 2 }, { list.kind, #list.items })
    _, list = get(stub, "/api/v1/namespaces/shop/services")
    assert.same({ app = "cart" }, list.items[1].spec.selector)
    assert.equals(8080, list.items[1].spec.ports[1].targetPort)

    local deploy = assert(stub:add_owner(kube_api.owner({ kind = "Deployment", namespace = "shop", name = "cart",
      labels = { app = "cart" } })))
    local rs = assert(stub:add_owner(kube_api.owner({ kind = "ReplicaSet", namespace = "shop", name = "cart-7d9",
      labels = { app = "cart" }, owner = deploy })))
    local cron = assert(stub:add_owner(kube_api.owner({ kind = "CronJob", namespace = "shop", name = "sweep" })))
    assert(stub:add_owner(kube_api.owner({ kind = "Job", namespace = "shop", name = "sweep-29", owner = cron })))
    local p = assert(stub:add_pod(kube_api.pod({ namespace = "shop", name = "cart-7d9-x2", node = "node-a",
      owner = rs, containers = { { name = "cart" } } })))
    local ref = p.metadata.ownerReferences[1]
    assert.same({ "apps/v1", "ReplicaSet", "cart-7d9", rs.metadata.uid, true },
      { ref.apiVersion, ref.kind, ref.name, ref.uid, ref.controller })
    local status, got = get(stub, "/apis/apps/v1/namespaces/shop/replicasets/cart-7d9")
    assert.equals(200, status)
    assert.equals(deploy.metadata.uid, got.metadata.ownerReferences[1].uid)
    got = ok(stub, "/apis/apps/v1/namespaces/shop/deployments/cart")
    assert.same({ "Deployment", "apps/v1", deploy.metadata.uid }, { got.kind, got.apiVersion, got.metadata.uid })
    got = ok(stub, "/apis/batch/v1/namespaces/shop/jobs/sweep-29")
    assert.equals("CronJob", got.metadata.ownerReferences[1].kind)
    assert.equals(200, (get(stub, "/apis/batch/v1/namespaces/shop/cronjobs/sweep")))
    status, got = get(stub, "/apis/apps/v1/namespaces/shop/statefulsets/db")
    assert.equals(404, status)
    assert.same({ 'statefulsets.apps "db" not found', "apps" }, { got.message, got.details.group })
    assert.equals(404, (get(stub, "/apis/apps/v1/namespaces/shop/daemonsets/agent")))
  end)

  it("refuses, through the control port, objects it does not serve and deletes of missing ones", function()
    local stored, err = stub:put({ kind = "Secret", metadata = { name = "s" } })
    assert.is_nil(stored)
    assert.matches("known kind", err)
    stored, err = stub:put({ kind = "Pod", metadata = {} })
    assert.is_nil(stored)
    assert.matches("metadata.name", err)
    stored, err = stub:delete_pod("shop", "none")
    assert.is_nil(stored)
    assert.matches("no Pod shop/none", err)
    assert.is_nil((stub:add_pod(kube_api.node({ name = "node-b" }))))
    assert.equals(404, (get(stub, "/api/v1/nodes/node-b")))
    assert(stub:delete_node("node-a"))
    assert.equals(404, (get(stub, "/api/v1/nodes/node-a")))
  end)

  it("streams ADDED, MODIFIED, DELETED from a list's resourceVersion on, in order, one chunk each", function()
    assert(stub:add_pod(pod("shop", "old", "node-a")))
    local _, list = get(stub, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a")
    local changed = pod("shop", "cart", "node-a", { app = "cart" })
    assert(stub:add_pod(changed))
    assert(stub:add_pod(pod("shop", "elsewhere", "node-b")))
    changed.metadata.labels.version = "2"
    local modified = assert(stub:add_pod(changed))
    local w = watch(stub, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dnode-a&resourceVersion=" ..
      list.metadata.resourceVersion)
    assert(stub:wait_watches(1), "the watch did not open")
    local deleted = assert(stub:delete_pod("shop", "cart"))
    assert.equals(1, stub:drop_watches())
    assert.equals(0, w:wait_end())
    assert.is_true(w:ended_cleanly())
    local events = w:events()
    w:remove()
    assert.same({ "ADDED cart", "MODIFIED cart", "DELETED cart" }, summary(events))
    assert.same({ "Pod", "v1" }, { events[1].object.kind, events[1].object.apiVersion })
    assert.equals(modified.metadata.resourceVersion, events[2].object.metadata.resourceVersion)
    assert.equals("2", events[2].object.metadata.labels.version)
    assert.equals(deleted.metadata.resourceVersion, events[3].object.metadata.resourceVersion)
    assert.equals(0, stub:state().watches)
  end)

  it("starts a watch without a resourceVersion with the objects there, and follows selectors", function()
    assert(stub:add_pod(pod("shop", "cart", "node-a", { app = "cart" })))
    local w = watch(stub, "/api/v1/namespaces/shop/pods?watch=true&labelSelector=app%3Dcart")
    assert(stub:wait_watches(1), "the watch did not open")
    local p = pod("shop", "cart", "node-a", { app = "other" })
    assert(stub:add_pod(p))
    p.metadata.labels.app = "cart"
    assert(stub:add_pod(p))
    assert(stub:add_pod(pod("ads", "cart", "node-a", { app = "cart" })))
    assert(stub:drop_watches())
    w:wait_end()
    assert.same({ "ADDED cart", "DELETED cart", "ADDED cart" }, summary(w:events()))
    w:remove()
  end)

  it("sends a BOOKMARK to watches that allow them", function()
    local with = watch(stub, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=1")
    local without = watch(stub, "/api/v1/pods?watch=1&resourceVersion=1")
    assert(stub:wait_watches(2), "the watches did not open")
    assert(stub:add_pod(pod("shop", "cart", "node-a")))
    assert.equals(2, stub:bookmark().watches)
    assert(stub:drop_watches())
    with:wait_end()
    without:wait_end()
    local events = with:events()
    assert.same({ "ADDED cart", "BOOKMARK nil" }, summary(events))
    assert.same({ kind = "Pod", apiVersion = "v1",
      metadata = { resourceVersion = tostring(stub:state().resourceVersion) } }, events[2].object)
    assert.same({ "ADDED cart" }, summary(without:events()))
    with:remove()
    without:remove()
  end)

  it("ends a watch at timeoutSeconds with the last chunk", function()
    local w = watch(stub, "/api/v1/services?watch=1&timeoutSeconds=1")
    assert.equals(0, w:wait_end())
    assert.is_true(w:ended_cleanly())
    w:remove()
  end)

  it("closes the connection of dropped watches mid-stream when asked to, and of those only", function()
    local w = watch(stub, "/api/v1/pods?watch=1")
    assert(stub:wait_watches(1), "the watch did not open")
    assert.equals(1, stub:drop_watches({ reset = true }))
    assert.are_not.equal(0, w:wait_end())
    assert.is_false(w:ended_cleanly())
    w:remove()
    local later = watch(stub, "/api/v1/pods?watch=1&timeoutSeconds=1")
    assert.equals(0, later:wait_end())
    assert.is_true(later:ended_cleanly())
    later:remove()
  end)

  it("answers a resourceVersion older than the compacted history with 410", function()
    local _, list = get(stub, "/api/v1/pods?limit=1")
    local old = list.metadata.resourceVersion
    assert(stub:add_pod(pod("shop", "a", "node-a")))
    assert(stub:add_pod(pod("shop", "b", "node-a")))
    local _, paged = get(stub, "/api/v1/pods?limit=1")
    assert(stub:add_pod(pod("shop", "c", "node-a")))
    assert(stub:compact())
    local w = watch(stub, "/api/v1/pods?watch=1&resourceVersion=" .. old)
    w:wait_end()
    local events = w:events()
    w:remove()
    assert.equals(1, #events)
    assert.equals("ERROR", events[1].type)
    assert.same({ "Status", 410, "Expired" }, { events[1].object.kind, events[1].object.code,
      events[1].object.reason })
    assert.matches("too old resource version: " .. old, events[1].object.message)

    local status, body = get(stub, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion=" .. old)
    assert.same({ 410, "Expired" }, { status, body.reason })
    assert.equals(410, (get(stub, "/api/v1/pods?limit=5&resourceVersion=" .. old)))
    status, body = get(stub, "/api/v1/pods?resourceVersion=" .. old)
    assert.same({ 200, 3 }, { status, #body.items })
    status, body = get(stub, "/api/v1/pods?limit=1&continue=" .. paged.metadata.continue)
    assert.same({ 410, "Expired" }, { status, body.reason })
    status, body = get(stub, "/api/v1/pods?limit=1&continue=" .. body.metadata.continue)
    assert.same({ 200, "b" }, { status, body.items[1].metadata.name })
    status = get(stub, "/api/v1/pods?resourceVersion=" .. (stub:state().resourceVersion + 5))
    assert.equals(504, status)
    assert.equals(400, (get(stub, "/api/v1/pods?resourceVersion=abc")))
    assert.equals(400, (get(stub, "/api/v1/pods?watch=1&resourceVersion=abc")))
    assert.equals(400, (get(stub, "/api/v1/pods?watch=1&timeoutSeconds=soon")))
    assert.equals(400, (get(stub, "/api/v1/pods?limit=many")))
  end)

  it("fails to start on a port in use, saying why", function()
    local other, err = kube_api.start({ port = stub.port })
    assert.is_nil(other)
    assert.matches("did not start: kube_stub: cannot serve: .*in use", err)
  end)

  it("keeps its objects, versions, history and token across a stop and a kill", function()
    local added = assert(stub:add_pod(pod("shop", "cart", "node-a")))
    assert(stub:set_token("t1-spec"))
    local port = stub.port
    assert.equals(0, stub:stop())
    assert(stub:start())
    assert.equals(port, stub.port)
    local status, got = get(stub, "/api/v1/namespaces/shop/pods/cart", { token = "t1-spec" })
    assert.equals(200, status)
    assert.same({ added.metadata.uid, added.metadata.resourceVersion },
      { got.metadata.uid, got.metadata.resourceVersion })
    stub:kill()
    assert(stub:start())
    local again = assert(stub:add_pod(pod("shop", "pay", "node-a")))
    assert.equals(tonumber(added.metadata.resourceVersion) + 1, tonumber(again.metadata.resourceVersion))
    local _, list = get(stub, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion=" ..
      added.metadata.resourceVersion, { token = "t1-spec" })
    assert.same({ "cart" }, { list.items[1].metadata.name, list.items[2] })
    local w = watch(stub, "/api/v1/pods?watch=1&resourceVersion=" .. (tonumber(added.metadata.resourceVersion) - 1),
      "t1-spec")
    assert(stub:wait_watches(1), "the watch did not open")
    assert(stub:drop_watches())
    w:wait_end()
    assert.same({ "ADDED cart", "ADDED pay" }, summary(w:events()))
    w:remove()
  end)
end)
