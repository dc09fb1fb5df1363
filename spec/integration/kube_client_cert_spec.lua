-- kube_client_cert_spec.lua - the Kubernetes client (runtime/kube/) that
-- authenticates with a client certificate and key instead of a token,
-- against the stand-in API server taking client certificates its CA signed:
-- list and watch authorized by the certificate, one from another CA
-- refused, and the options kube/access.lua finds in a kubeconfig's
-- client-certificate and client-key (file paths, or -data) used end to end.
local access = require("moonrover.kube.access")
local certs = require("support.kube.certs")
local client = require("moonrover.kube.client")
local config = require("moonrover.config")
local e2e = require("support.e2e")
local files = require("support.files")
local kube_api = require("support.kube_api")
local kube_view = require("support.kube_view")

local function pod(name, node)
  return kube_api.pod({ namespace = "shop", name = name, node = node, containers = { { name = "app" } } })
end

-- The base64 text of a file's bytes, on one line.
local function base64_of(path)
  local code, out, err = e2e.run("base64 -w0 " .. e2e.quote(path))
  assert(code == 0, "base64 failed: " .. err)
  return out
end

describe("Kubernetes client with a client certificate", function()
  local stub, feed

  before_each(function()
    stub = assert(kube_api.start({ node = "node-a", client_certs = true }))
  end)

  after_each(function()
    if feed then
      feed:close()
      feed = nil
    end
    stub:stop()
    e2e.rmdir(stub.dir)
  end)

  -- Opens a client with opts (client.open's, node_name added), checks the
  -- node, starts it and waits for the pods of node-a and the services to
  -- be listed, then for a pod added after the watches opened; returns the
  -- view of its changes.
  local function lists_and_watches(opts)
    assert(stub:add_pod(pod("cart-1", "node-a")))
    assert(stub:add_pod(pod("pay-1", "node-b")))
    opts.node_name = "node-a"
    feed = assert(client.open(opts))
    assert.same({ true }, { feed:check_node(5000) })
    assert(feed:start())
    local view = kube_view.view(feed)
    assert(view:wait(function(v) return v.synced.pod and v.synced.service end), "not synced: " ..
      feed:status().last_error)
    assert.same({ "shop/cart-1" }, view:names("pod"))
    assert(stub:wait_watches(2), "the client did not watch")
    assert(stub:add_pod(pod("cart-2", "node-a")))
    assert(view:wait(function(v) return v.objects.pod["shop/cart-2"] end), "no ADDED from the watch")
    return view
  end

  -- Every request the stand-in answered, as "auth path watch?".
  local function requests()
    local out = {}
    for i, r in ipairs(stub:requests()) do
      out[i] = string.format("%s %s%s", tostring(r.auth), r.path, r.query.watch and " watch" or "")
    end
    return out
  end

  -- Whether every request was authorized by the client certificate, and
  -- the pods were listed and watched.
  local function by_certificate()
    local seen, list, watch = requests(), false, false
    for _, line in ipairs(seen) do
      assert.matches("^certificate ", line)
      list = list or line == "certificate /api/v1/pods"
      watch = watch or line == "certificate /api/v1/pods watch"
    end
    assert.is_true(list and watch, "no list and watch of pods among " .. table.concat(seen, ", "))
  end

  it("lists and watches pods authorized by its certificate, without a token", function()
    lists_and_watches({ server = stub:url(), ca_pem = files.read(stub.ca), cert_pem = files.read(stub.client_cert),
      key_pem = files.read(stub.client_key) })
    by_certificate()
    assert.equals("certificate /api/v1/nodes/node-a", requests()[1])
    assert.equals(0, feed:status().errors)
  end)

  -- check_node with a certificate and key from pick(own, other): own the
  -- stand-in's client files, other those of a CA it does not know. Fails
  -- the case unless the check failed; returns why.
  local function refused(pick)
    local dir = e2e.tmpdir()
    local other = assert(certs.make(dir, { client = true }))
    local own = { client_cert = stub.client_cert, client_key = stub.client_key }
    local cert, key = pick(own, other)
    feed = assert(kube_view.open(stub, { token = false, cert_pem = files.read(cert.client_cert),
      key_pem = files.read(key.client_key) }))
    local ok, why = feed:check_node(5000)
    e2e.rmdir(dir)
    assert.is_false(ok)
    return why
  end

  it("is refused with a clear error for a certificate another CA signed", function()
    local why = refused(function(_, other) return other, other end)
    local said = ("the API server closed the connection in TLS, as it does for a client certificate it does not "
      .. "trust: "):gsub("%p", "%%%0")
    assert.matches('^cannot get node "node%-a": ' .. said, why)
    local st = feed:status()
    assert.equals(1, st.errors)
    assert.matches("^GET node node%-a: " .. said, st.last_error)
    assert.same({}, stub:requests())
  end)

  it("says the client certificate cannot be used when its key is another's", function()
    local why = refused(function(own, other) return own, other end)
    assert.matches('^cannot get node "node%-a": the client certificate or its key cannot be used: ', why)
    assert.same({}, stub:requests())
  end)

  -- The kubeconfig at stub.dir/kube/config with the cluster's and user's
  -- fields: either paths relative to it (the certificates copied beside
  -- it) or -data fields; and what access.resolve finds in it.
  local function resolve(data)
    local dir = stub.dir .. "/kube"
    assert.equals(0, (e2e.run("mkdir -p " .. e2e.quote(dir .. "/certs"))))
    local cluster, user = {}, {}
    local fields = { { cluster, "certificate-authority", stub.ca, "ca.crt" },
      { user, "client-certificate", stub.client_cert, "certs/client.crt" },
      { user, "client-key", stub.client_key, "certs/client.key" } }
    for _, f in ipairs(fields) do
      local into, field, source, copy = f[1], f[2], f[3], f[4]
      if data then
        into[field .. "-data"] = base64_of(source)
      else
        files.write(dir .. "/" .. copy, files.read(source))
        into[field] = copy
      end
    end
    local path = stub:kubeconfig(dir .. "/config", { cluster = cluster, user = user })
    local opts = assert(access.resolve({ KUBECONFIG = path }, config.read))
    assert.same({ stub:url(), files.read(stub.ca), files.read(stub.client_cert), files.read(stub.client_key) },
      { opts.server, opts.ca_pem, opts.cert_pem, opts.key_pem })
    assert.is_nil(opts.token)
    assert.is_nil(opts.token_file)
    return opts
  end

  it("works with a kubeconfig's client-certificate and client-key files", function()
    lists_and_watches(resolve(false))
    by_certificate()
  end)

  it("works with a kubeconfig's client-certificate-data and client-key-data", function()
    lists_and_watches(resolve(true))
    by_certificate()
  end)
end)
