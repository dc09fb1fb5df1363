-- access.lua - where the Kubernetes API server is and how to authenticate
-- to it: the options of kube/client.lua's open() (server, ca_pem, token,
-- token_file, cert_pem, key_pem), found as a client in a pod finds them,
-- else as kubectl does.
--
--   in a cluster     KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the
--                    service account's token (token_file: the client reads it
--                    again when it is rotated) and CA under SERVICE_ACCOUNT
--   a kubeconfig     the files of KUBECONFIG (":"-separated) or ~/.kube/config;
--                    the first file that names a current-context gives it,
--                    and each context, cluster and user is taken from the first
--                    file that has one of that name (kubectl's merge). A
--                    cluster gives server and certificate-authority(-data),
--                    a user token, tokenFile, client-certificate(-data) and
--                    client-key(-data); a relative path is relative to the
--                    directory of the file that names it
--
-- TLS is always verified: insecure-skip-tls-verify is refused, and so are
-- users that authenticate through an exec plugin, an auth-provider or a
-- password, which moonrover does not run. Everything is read through the
-- injected read_file, so that specs give it files of their own.
local base64 = require("moonrover.lib.base64")
local yaml = require("moonrover.lib.yaml")

local _M = {}

_M.SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"

local function set(v)
  return v ~= nil and v ~= ""
end

local function in_cluster(env, read_file)
  local host, port = env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT
  if host:find(":", 1, true) then
    host = "[" .. host .. "]"
  end
  local token_file, ca_file = _M.SERVICE_ACCOUNT .. "/token", _M.SERVICE_ACCOUNT .. "/ca.crt"
  local token, err = read_file(token_file)
  if not token then
    return nil, "in a cluster (KUBERNETES_SERVICE_HOST is set) but the service account's token cannot be read: " .. err
  end
  local ca
  ca, err = read_file(ca_file)
  if not ca then
    return nil, "in a cluster (KUBERNETES_SERVICE_HOST is set) but the service account's CA cannot be read: " .. err
  end
  return { server = "https://" .. host .. ":" .. port, ca_pem = ca, token_file = token_file }
end

local function dir_of(path)
  return path:match("^(.*)/[^/]*$") or "."
end

local function absolute(path, dir)
  if path:sub(1, 1) == "/" then
    return path
  end
  return dir .. "/" .. path
end

-- The kubeconfig files to read: KUBECONFIG's, or ~/.kube/config.
local function config_paths(env)
  local paths = {}
  if set(env.KUBECONFIG) then
    for p in env.KUBECONFIG:gmatch("[^:]+") do
      paths[#paths + 1] = p
    end
    return paths, "KUBECONFIG=" .. env.KUBECONFIG
  end
  if not set(env.HOME) then
    return paths, "KUBECONFIG and HOME are not set"
  end
  paths[1] = env.HOME .. "/.kube/config"
  return paths, paths[1]
end

-- The named entries of list (contexts, clusters, users) into into, the
-- first of each name winning, each with the directory of its file.
local function merge_named(into, list, dir)
  if not yaml.is_sequence(list) then
    return
  end
  for _, entry in ipairs(list) do
    if type(entry) == "table" and type(entry.name) == "string" and not into[entry.name] then
      into[entry.name] = { dir = dir, value = entry }
    end
  end
end

-- Every kubeconfig file that exists, merged; nil and why when none does
-- or one cannot be parsed.
local function load_configs(env, read_file)
  local paths, where = config_paths(env)
  local merged = { contexts = {}, clusters = {}, users = {}, read = {} }
  for _, path in ipairs(paths) do
    local text = read_file(path)
    if text then
      local doc, err = yaml.parse(text, path)
      if err then
        return nil, err
      end
      if type(doc) == "table" then
        merged.read[#merged.read + 1] = path
        if not merged.current and set(doc["current-context"]) then
          merged.current, merged.current_in = doc["current-context"], path
        end
        local dir = dir_of(path)
        merge_named(merged.contexts, doc.contexts, dir)
        merge_named(merged.clusters, doc.clusters, dir)
        merge_named(merged.users, doc.users, dir)
      end
    end
  end
  if #merged.read == 0 then
    return nil, "not in a cluster (KUBERNETES_SERVICE_HOST is not set) and no kubeconfig file (" .. where .. ")"
  end
  return merged
end

-- The PEM text of a "-data" field or of the file a path field names
-- (relative to dir), or nil when neither is set; false and why when it
-- cannot be had.
local function pem(fields, key, dir, read_file, what)
  local data = fields[key .. "-data"]
  if set(data) then
    local text, err = base64.decode(data)
    if not text then
      return false, what .. " " .. key .. "-data: " .. err
    end
    return text
  end
  local path = fields[key]
  if set(path) then
    local text, err = read_file(absolute(path, dir))
    if not text then
      return false, what .. " " .. key .. ": " .. err
    end
    return text
  end
  return nil
end

local function from_cluster(entry, opts, read_file)
  local name, c = entry.value.name, entry.value.cluster
  if type(c) ~= "table" or not set(c.server) then
    return "cluster \"" .. name .. "\" has no server"
  end
  if c["insecure-skip-tls-verify"] == "true" then
    return "cluster \"" .. name .. "\" sets insecure-skip-tls-verify: moonrover always verifies the API server's "
      .. "certificate (give certificate-authority or certificate-authority-data)"
  end
  opts.server = c.server
  local ca, err = pem(c, "certificate-authority", entry.dir, read_file, "cluster \"" .. name .. "\"")
  if ca == false then
    return err
  end
  opts.ca_pem = ca
end

local UNSUPPORTED = { exec = "an exec plugin", ["auth-provider"] = "an auth-provider", password = "a password" }

local function from_user(entry, opts, read_file)
  local name, u = entry.value.name, entry.value.user
  if type(u) ~= "table" then
    return nil
  end
  local what = "user \"" .. name .. "\""
  for key, how in pairs(UNSUPPORTED) do
    if u[key] ~= nil then
      return what .. " authenticates with " .. how .. " (" .. key .. "), which moonrover does not run: give it a "
        .. "token, a tokenFile or a client certificate and key"
    end
  end
  if set(u.tokenFile) then
    opts.token_file = absolute(u.tokenFile, entry.dir)
  elseif set(u.token) then
    opts.token = u.token
  end
  local cert, err = pem(u, "client-certificate", entry.dir, read_file, what)
  if cert == false then
    return err
  end
  local key
  key, err = pem(u, "client-key", entry.dir, read_file, what)
  if key == false then
    return err
  end
  if (cert == nil) ~= (key == nil) then
    return what .. " has a client " .. (cert and "certificate but no key" or "key but no certificate")
  end
  opts.cert_pem, opts.key_pem = cert, key
end

local function from_kubeconfig(env, read_file)
  local merged, err = load_configs(env, read_file)
  if not merged then
    return nil, err
  end
  local files = table.concat(merged.read, ", ")
  if not merged.current then
    return nil, "no current-context in the kubeconfig (" .. files .. ")"
  end
  local ctx = merged.contexts[merged.current]
  if not ctx or type(ctx.value.context) ~= "table" then
    return nil, "the kubeconfig's current-context \"" .. merged.current .. "\" is not among its contexts (" .. files
      .. ")"
  end
  local cluster_name, user_name = ctx.value.context.cluster, ctx.value.context.user
  local cluster = merged.clusters[cluster_name or ""]
  if not cluster then
    return nil, "context \"" .. merged.current .. "\" names cluster \"" .. tostring(cluster_name)
      .. "\", which the kubeconfig does not have (" .. files .. ")"
  end
  local opts = {}
  err = from_cluster(cluster, opts, read_file)
  if err then
    return nil, err
  end
  if set(user_name) then
    local user = merged.users[user_name]
    if not user then
      return nil, "context \"" .. merged.current .. "\" names user \"" .. user_name
        .. "\", which the kubeconfig does not have (" .. files .. ")"
    end
    err = from_user(user, opts, read_file)
    if err then
      return nil, err
    end
  end
  return opts
end

-- The options of client.open (without node_name and namespaces), or nil and
-- why. env: the environment (a table of names, such as one whose __index is
-- os.getenv); read_file(path) -> its text, or nil and why.
function _M.resolve(env, read_file)
  if set(env.KUBERNETES_SERVICE_HOST) and set(env.KUBERNETES_SERVICE_PORT) then
    return in_cluster(env, read_file)
  end
  return from_kubeconfig(env, read_file)
end

return _M
