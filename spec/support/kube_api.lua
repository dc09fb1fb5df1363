-- kube_api.lua - runs the stand-in Kubernetes API server
-- (spec/support/kube/kube_stub.py) for specs: makes its CA and certificate
-- (and a client certificate when it takes those), starts it on free ports, changes its objects and token through its
-- control port, reads the requests it answered, stops it and starts it
-- again with its objects and history.
--
--   local stub = assert(kube_api.start({ token = "t0", node = "node-a" }))
--   local rs = assert(stub:add_owner(kube_api.owner({ kind = "ReplicaSet", namespace = "shop", name = "cart-7d9" })))
--   assert(stub:add_pod(kube_api.pod({ namespace = "shop", name = "cart-7d9-x2", node = "node-a", owner = rs,
--     labels = { app = "cart" }, containers = { { name = "cart", id = kube_api.container_id() } } })))
--   curl --cacert stub.ca -H "Authorization: Bearer t0" stub:url() .. "/api/v1/pods"
--   stub:stop()   -- then e2e.rmdir(stub.dir)
--
-- spec/support/kube/README.md lists every function and what the server answers.
local cjson = require("cjson")
local clock = require("support.clock")
local e2e = require("support.e2e")
local certs = require("support.kube.certs")
local objects = require("support.kube.objects")
local stand_in = require("support.stand_in")
local tables = require("moonrover.lib.tables")
local write = require("support.files").write

local _M = {}
local Stub = stand_in.class()

_M.python = stand_in.PYTHON
_M.script = stand_in.source("spec/support/kube/kube_stub.py")
_M.pod, _M.service, _M.node, _M.owner = objects.pod, objects.service, objects.node, objects.owner
_M.container_id, _M.owner_ref = objects.container_id, objects.owner_ref

local function command_line(self)
  local words = { _M.python, _M.script, "--port", tostring(self.port or 0), "--control-port",
    tostring(self.control_port or 0), "--tls", self.cert, self.key, "--token", self.first_token,
    "--state", self.state_file, "--requests", self.requests_file }
  if self.client_cert then
    words[#words + 1] = "--client-ca"
    words[#words + 1] = self.ca
  end
  return stand_in.command_line(words)
end

-- Starts the stand-in: on new free ports the first time, on the same ports
-- and with the same state file after stop() or kill(). Returns self, or nil
-- and why (its stderr) when it did not come up.
function Stub:start()
  stand_in.launch(self, command_line(self))
  local ports = stand_in.wait_ports(self, "port (%d+) control (%d+)", 15)
  if not ports then
    self:stop()
    return nil, "the stand-in API server did not start: " .. self:stderr()
  end
  self.port, self.control_port = ports[1], ports[2]
  return self
end

-- Starts a stand-in. opts (all optional): dir (its files; default a new
-- temp dir, see e2e.rmdir, removed again when the start fails), port
-- (default any free one), token ("spec-token"), node (a node name: that
-- Node is put before start returns), client_certs (true: it also authorizes
-- a request by a client certificate its CA signed, and stub.client_cert
-- and stub.client_key are the paths of one). Returns the stub, or nil and
-- why.
function _M.start(opts)
  opts = opts or {}
  local dir = opts.dir or e2e.tmpdir()
  local function failed(why)
    if not opts.dir then
      e2e.rmdir(dir)
    end
    return nil, why
  end
  local tls, err = certs.make(dir, { client = opts.client_certs })
  if not tls then
    return failed(err)
  end
  local self = setmetatable({ dir = dir, ca = tls.ca, cert = tls.cert, key = tls.key, port = opts.port,
    client_cert = tls.client_cert, client_key = tls.client_key,
    first_token = opts.token or "spec-token", state_file = dir .. "/kube-state.json",
    requests_file = dir .. "/kube-requests.jsonl", out = dir .. "/kube.out", err = dir .. "/kube.err",
    pid_file = dir .. "/kube.pid", exit_file = dir .. "/kube.exit" }, Stub)
  local ok, why = self:start()
  if ok and opts.node then
    ok, why = self:add_node(objects.node({ name = opts.node }))
  end
  if not ok then
    self:stop()
    return failed(why)
  end
  return self
end

-- "https://127.0.0.1:N", the API server's address.
function Stub:url()
  return "https://127.0.0.1:" .. tostring(self.port)
end

local KUBECONFIG = [[
apiVersion: v1
kind: Config
current-context: spec
clusters:
  - name: spec
    cluster:
      server: <server>
<cluster>
users:
  - name: spec
    user:
<user>
contexts:
  - name: spec
    context:
      cluster: spec
      user: spec
]]

-- YAML lines, six spaces in, of a table's fields in name order.
local function fields_yaml(t)
  local lines = {}
  for i, name in ipairs(tables.sorted_keys(t)) do
    lines[i] = "      " .. name .. ": " .. t[name]
  end
  return table.concat(lines, "\n")
end

-- Writes a kubeconfig for the stand-in at path, for KUBECONFIG; returns
-- path. fields (optional): the cluster's fields besides its server
-- (default: certificate-authority, its CA file) and the user's (default:
-- token, its first token), as { cluster = {...}, user = {...} }.
function Stub:kubeconfig(path, fields)
  fields = fields or {}
  local values = { server = self:url(),
    cluster = fields_yaml(fields.cluster or { ["certificate-authority"] = self.ca }),
    user = fields_yaml(fields.user or { token = self.first_token }) }
  write(path, (KUBECONFIG:gsub("<(%w+)>", values)))
  return path
end

-- One control request; the decoded answer, or nil and the error.
local function control(self, path, body)
  local file = self.dir .. "/kube-control.json"
  local fh = assert(io.open(file, "w"))
  fh:write(body and cjson.encode(body) or "{}")
  fh:close()
  local code, out, err = e2e.run(string.format("curl -sS -X POST --data-binary @%s -w '\\n%%{http_code}' %s",
    e2e.quote(file), e2e.quote("http://127.0.0.1:" .. self.control_port .. path)))
  if code ~= 0 then
    return nil, "the stand-in API server's control port did not answer: " .. err
  end
  local text, status = out:match("^(.*)\n(%d+)$")
  local answer = cjson.decode(text)
  if status ~= "200" then
    return nil, answer.error
  end
  return answer
end

-- Adds an object, or replaces the one of the same kind, namespace and name
-- (watches see ADDED, or MODIFIED). Returns the stored object (uid,
-- creationTimestamp, resourceVersion filled in), or nil and why.
function Stub:put(obj)
  return control(self, "/objects", obj)
end

local function put_kind(kind)
  return function(self, obj)
    if obj.kind ~= kind then
      return nil, "not a " .. kind .. ": " .. tostring(obj.kind)
    end
    return self:put(obj)
  end
end

Stub.add_pod, Stub.add_service, Stub.add_node = put_kind("Pod"), put_kind("Service"), put_kind("Node")

-- Adds a pod's owner (any kind objects.owner makes).
function Stub:add_owner(obj)
  return self:put(obj)
end

-- Deletes an object (watches see DELETED); returns its last state, or nil
-- and why (no such object).
function Stub:delete(kind, namespace, name)
  return control(self, "/delete", { kind = kind, namespace = namespace, name = name })
end

function Stub:delete_pod(namespace, name)
  return self:delete("Pod", namespace, name)
end

function Stub:delete_service(namespace, name)
  return self:delete("Service", namespace, name)
end

function Stub:delete_node(name)
  return self:delete("Node", nil, name)
end

-- Replaces the bearer token: requests with the old one get 401 from now on.
function Stub:set_token(token)
  return control(self, "/token", { token = token })
end

-- Compacts the history: every resourceVersion older than the current one is
-- too old from now on (410). Returns the state (below).
function Stub:compact()
  return control(self, "/compact")
end

-- Ends every open watch: with the last chunk, as at a timeout, or with
-- reset = true by closing the connection mid-stream. Returns how many.
function Stub:drop_watches(opts)
  local answer, err = control(self, "/drop-watches", { reset = opts and opts.reset or false })
  return answer and answer.dropped, err
end

-- Makes every open watch that allows bookmarks send a BOOKMARK now.
function Stub:bookmark()
  return control(self, "/bookmark")
end

-- { resourceVersion = n (the latest write), compacted = n, watches = n
-- (open now), token = the current one }.
function Stub:state()
  return control(self, "/state")
end

-- Waits (up to `seconds`, default 10) until at least n watches are open;
-- returns the state, or nil on timeout.
function Stub:wait_watches(n, seconds)
  return clock.wait_for(function()
    local s = self:state()
    return s and s.watches >= n and s or nil
  end, seconds)
end

-- Every request the stand-in answered, oldest first: { time (ms), method,
-- path, query = { name -> value }, authorized (false: 401), auth ("token",
-- or "certificate"; nil for a 401), code }; those
-- for which keep(request) is true when keep is given.
function Stub:requests(keep)
  local out = {}
  for line in (e2e.read_all(self.requests_file) or ""):gmatch("([^\n]*)\n") do
    local r = cjson.decode(line)
    if not keep or keep(r) then
      out[#out + 1] = r
    end
  end
  return out
end

-- Stops the stand-in with SIGTERM; returns its exit status (nil if it had to
-- be killed). Safe to call twice; start() brings it back.
function Stub:stop()
  return stand_in.signal(self, "TERM")
end

-- Kills the stand-in with SIGKILL, as a crash; start() brings it back.
function Stub:kill()
  return stand_in.signal(self, "KILL")
end

return _M
