-- access_spec.lua - where the API server is: in a cluster from the service
-- account, else from KUBECONFIG's files or ~/.kube/config, with certificates
-- inline or in files relative to their kubeconfig; and the clear errors of
-- what moonrover does not do. Files live in a temp dir that read_file
-- treats as the root.
local access = require("moonrover.kube.access")
local e2e = require("support.e2e")
local files = require("support.files")

local CA, CERT, KEY = "-----BEGIN CERTIFICATE-----\nca\n", "-----BEGIN CERTIFICATE-----\ncert\n",
  "-----BEGIN PRIVATE KEY-----\nkey\n"

local function b64(text)
  local p = assert(io.popen("printf %s " .. e2e.quote(text) .. " | base64 -w0"))
  local out = p:read("*a")
  p:close()
  return out
end

describe("kube access", function()
  local root
  before_each(function()
    root = e2e.tmpdir()
  end)
  after_each(function()
    e2e.rmdir(root)
  end)

  local function put(path, text)
    os.execute("mkdir -p " .. e2e.quote(root .. path:match("^(.*)/")))
    files.write(root .. path, text)
  end

  local function read_file(path)
    local text = files.read(root .. path)
    if not text then
      return nil, "cannot open " .. path
    end
    return text
  end

  local function kubeconfig(path, opts)
    put(path, table.concat({
      "apiVersion: v1", "kind: Config",
      opts.current and ("current-context: " .. opts.current) or "",
      "contexts:", opts.contexts or "- name: dev\n  context:\n    cluster: c1\n    user: u1\n    namespace: shop",
      "clusters:", opts.clusters or "- name: c1\n  cluster:\n    server: https://10.0.0.1:6443",
      "users:", opts.users or "- name: u1\n  user:\n    token: t0", "" }, "\n"))
  end

  it("finds the API server of the cluster it runs in from the service account", function()
    put(access.SERVICE_ACCOUNT .. "/token", "tok")
    put(access.SERVICE_ACCOUNT .. "/ca.crt", CA)
    local env = { KUBERNETES_SERVICE_HOST = "10.96.0.1", KUBERNETES_SERVICE_PORT = "443", KUBECONFIG = "/nope" }
    assert.same({ server = "https://10.96.0.1:443", ca_pem = CA, token_file = access.SERVICE_ACCOUNT .. "/token" },
      access.resolve(env, read_file))
    env.KUBERNETES_SERVICE_HOST = "fd00::1"
    assert.equal("https://[fd00::1]:443", access.resolve(env, read_file).server)
  end)

  it("says which service account file is missing in a cluster", function()
    put(access.SERVICE_ACCOUNT .. "/token", "tok")
    local _, err = access.resolve({ KUBERNETES_SERVICE_HOST = "10.96.0.1", KUBERNETES_SERVICE_PORT = "443" },
      read_file)
    assert.equal("in a cluster (KUBERNETES_SERVICE_HOST is set) but the service account's CA cannot be read: "
      .. "cannot open " .. access.SERVICE_ACCOUNT .. "/ca.crt", err)
  end)

  it("reads ~/.kube/config with inline certificates", function()
    kubeconfig("/home/u/.kube/config", { current = "dev",
      clusters = "- name: c1\n  cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority-data: "
        .. b64(CA),
      users = "- name: u1\n  user:\n    client-certificate-data: " .. b64(CERT) .. "\n    client-key-data: "
        .. b64(KEY) })
    assert.same({ server = "https://10.0.0.1:6443", ca_pem = CA, cert_pem = CERT, key_pem = KEY },
      access.resolve({ HOME = "/home/u" }, read_file))
  end)

  it("reads certificate files and a token file relative to the kubeconfig's directory", function()
    put("/etc/kube/pki/ca.crt", CA)
    put("/etc/kube/pki/client.crt", CERT)
    put("/abs/client.key", KEY)
    kubeconfig("/etc/kube/admin.conf", { current = "dev",
      clusters = "- name: c1\n  cluster:\n    server: https://k:6443\n    certificate-authority: pki/ca.crt",
      users = "- name: u1\n  user:\n    tokenFile: pki/token\n    client-certificate: pki/client.crt\n"
        .. "    client-key: /abs/client.key" })
    assert.same({ server = "https://k:6443", ca_pem = CA, token_file = "/etc/kube/pki/token",
      cert_pem = CERT, key_pem = KEY },
      access.resolve({ KUBECONFIG = "/etc/kube/admin.conf", HOME = "/home/u" }, read_file))
  end)

  it("takes the first KUBECONFIG file with a current context, and names from the first file that has them", function()
    kubeconfig("/a/config", { contexts = "- name: dev\n  context:\n    cluster: c1\n    user: u1",
      clusters = "- name: c1\n  cluster:\n    server: https://first:6443",
      users = "- name: u1\n  user:\n    token: a" })
    kubeconfig("/b/config", { current = "dev", clusters = "- name: c1\n  cluster:\n    server: https://second:6443",
      users = "- name: u1\n  user:\n    token: b" })
    kubeconfig("/c/config", { current = "other" })
    assert.same({ server = "https://first:6443", token = "a" },
      access.resolve({ KUBECONFIG = "/missing:/a/config:/b/config:/c/config" }, read_file))
  end)

  it("says when there is neither a cluster nor a kubeconfig", function()
    assert.same({ nil, "not in a cluster (KUBERNETES_SERVICE_HOST is not set) and no kubeconfig file "
      .. "(/home/u/.kube/config)" }, { access.resolve({ HOME = "/home/u" }, read_file) })
    assert.same({ nil, "not in a cluster (KUBERNETES_SERVICE_HOST is not set) and no kubeconfig file "
      .. "(KUBECONFIG=/x:/y)" }, { access.resolve({ KUBECONFIG = "/x:/y" }, read_file) })
  end)

  it("refuses exec plugins, auth-providers, passwords and unverified TLS, each in one line", function()
    local cases = {
      { users = "- name: u1\n  user:\n    exec:\n      command: aws", want = 'user "u1" authenticates with an exec '
        .. "plugin (exec), which moonrover does not run: give it a token, a tokenFile or a client certificate "
        .. "and key" },
      { users = "- name: u1\n  user:\n    auth-provider:\n      name: gcp", want = "an auth-provider (auth-provider)" },
      { users = "- name: u1\n  user:\n    username: a\n    password: b", want = "a password (password)" },
      { clusters = "- name: c1\n  cluster:\n    server: https://k\n    insecure-skip-tls-verify: true",
        want = 'cluster "c1" sets insecure-skip-tls-verify: moonrover always verifies' },
      { clusters = "- name: c1\n  cluster:\n    certificate-authority: ca.crt", want = 'cluster "c1" has no server' },
      { users = "- name: u1\n  user:\n    client-certificate-data: " .. b64(CERT),
        want = 'user "u1" has a client certificate but no key' },
      { users = "- name: u1\n  user:\n    client-key: nope.key",
        want = 'user "u1" client-key: cannot open /k/nope.key' },
      { users = "- name: u2\n  user:\n    token: x", want = 'context "dev" names user "u1", which the kubeconfig does '
        .. "not have (/k/config)" },
      { current = "prod", want = 'the kubeconfig\'s current-context "prod" is not among its contexts (/k/config)' },
      { current = false, want = "no current-context in the kubeconfig (/k/config)" },
    }
    for _, case in ipairs(cases) do
      if case.current == nil then
        case.current = "dev"
      end
      kubeconfig("/k/config", case)
      local opts, err = access.resolve({ KUBECONFIG = "/k/config" }, read_file)
      assert.is_nil(opts)
      assert.is_truthy(err:find(case.want, 1, true), err)
    end
  end)
end)
