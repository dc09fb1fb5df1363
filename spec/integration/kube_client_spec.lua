-- kube_client_spec.lua - the Kubernetes client's requests (runtime/kube/)
-- against the stand-in API server: TLS verified with the CA given, the
-- bearer token and its file re-read when rotated, the node check, single
-- objects by path with their cache, and the options it refuses.
local certs = require("support.kube.certs")
local clock = require("support.clock")
local e2e = require("support.e2e")
local files = require("support.files")
local kube_api = require("support.kube_api")
local kube_view = require("support.kube_view")

describe("Kubernetes client requests", function()
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

  it("checks the node: 1 when it exists, false and why when it does not", function()
    feed = assert(kube_view.open(stub))
    assert.is_true(feed:check_node(5000))
    feed:close()
    feed = assert(kube_view.open(stub, { node_name = "node-z" }))
    assert.same({ false, 'node "node-z" not found' }, { feed:check_node(5000) })
    local r = stub:requests()
    assert.same({ "/api/v1/nodes/node-a", "/api/v1/nodes/node-z" }, { r[1].path, r[2].path })
    assert.same({ 200, 404 }, { r[1].code, r[2].code })
    assert.equals(0, feed:status().errors)
  end)

  it("verifies the server's certificate: another CA is an error that says so", function()
    local dir = e2e.tmpdir()
    local other = assert(certs.make(dir))
    feed = assert(kube_view.open(stub, { ca_pem = files.read(other.ca) }))
    local ok, why = feed:check_node(5000)
    e2e.rmdir(dir)
    assert.is_false(ok)
    assert.matches("TLS verification of the API server failed: .*certificate", why)
    assert.equals(1, feed:status().errors)
    assert.same({}, stub:requests())
  end)

  it("sends the bearer token: a wrong one is refused, said and counted", function()
    feed = assert(kube_view.open(stub, { token = "wrong" }))
    local ok, why = feed:check_node(5000)
    assert.is_false(ok)
    assert.matches("401 Unauthorized", why)
    local st = feed:status()
    assert.equals(1, st.errors)
    assert.matches("401", st.last_error)
    assert.is_false(stub:requests()[1].authorized)
  end)

  it("re-reads the token file when it is rotated", function()
    local token_file = stub.dir .. "/token"
    files.write(token_file, stub.first_token .. "\n")
    feed = assert(kube_view.open(stub, { token = "ignored", token_file = token_file }))
    assert.is_true(feed:check_node(5000))
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced")
    assert(stub:wait_watches(2), "the client did not watch")

    assert(stub:set_token("rotated"))
    files.write(token_file .. ".new", "rotated\n")
    assert(os.rename(token_file .. ".new", token_file))
    local since = #stub:requests()
    assert(stub:drop_watches())
    assert(stub:wait_watches(2), "the watches did not resume with the new token")
    assert(stub:add_pod(kube_api.pod({ namespace = "shop", name = "cart-1", node = "node-a",
      containers = { { name = "app" } } })))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-1"] end), "no ADDED after the rotation")
    local after = stub:requests()
    local last = after[#after]
    assert.is_true(#after > since)
    assert.is_true(last.authorized, "the last request was refused: the token was not re-read")
  end)

  it("gets an owner by path: pending, then the object; a missing one is not found", function()
    local rs = assert(stub:add_owner(kube_api.owner({ kind = "ReplicaSet", namespace = "shop", name = "cart-7d9",
      labels = { app = "cart" } })))
    feed = assert(kube_view.open(stub))
    local path = "/apis/apps/v1/namespaces/shop/replicasets/cart-7d9"
    assert.same({ nil, "pending" }, { feed:get(path) })
    assert(feed:start())
    local obj = clock.wait_for(function() return (feed:get(path)) end, kube_view.WAIT_S)
    assert(obj, "the owner never came")
    assert.same({ "ReplicaSet", "cart-7d9", rs.metadata.uid }, { obj.kind, obj.metadata.name, obj.metadata.uid })
    assert.is_nil(obj.metadata.managedFields)

    local missing = "/apis/apps/v1/namespaces/shop/replicasets/gone"
    local why = clock.wait_for(function()
      local _, w = feed:get(missing)
      return w ~= "pending" and w
    end, kube_view.WAIT_S)
    assert.equals("not found", why)
    local gets = stub:requests(function(r) return r.path == path or r.path == missing end)
    assert.equals(2, #gets, "the cache asked again")
    assert.is_nil(feed:get("not/a/path"))
  end)

  it("retries a GET that failed, after a backoff", function()
    assert(stub:add_owner(kube_api.owner({ kind = "Deployment", namespace = "shop", name = "cart" })))
    feed = assert(kube_view.open(stub))
    assert(feed:start())
    stub:kill()
    local path = "/apis/apps/v1/namespaces/shop/deployments/cart"
    local why = clock.wait_for(function()
      local _, w = feed:get(path)
      return w ~= "pending" and w
    end, kube_view.WAIT_S)
    assert.matches("the API server did not give " .. path:gsub("%p", "%%%0"), why)
    assert.matches("cannot reach the API server", feed:status().last_error)
    assert(stub:start())
    local obj = clock.wait_for(function() return (feed:get(path)) end, kube_view.WAIT_S)
    assert(obj, "the GET was not tried again")
    assert.equals("Deployment", obj.kind)
  end)

  it("refuses a server that is not https and a missing node name", function()
    local k, why = kube_view.open(stub, { server = "http://127.0.0.1:" .. stub.port })
    assert.is_nil(k)
    assert.matches("must be an https:// address", why)
    k, why = kube_view.open(stub, { node_name = "" })
    assert.is_nil(k)
    assert.matches("needs this node's name", why)
    k, why = kube_view.open(stub, { token_file = stub.dir .. "/no-such-token" })
    assert.is_nil(k)
    assert.matches("cannot read the token file .*no%-such%-token", why)
  end)
end)
