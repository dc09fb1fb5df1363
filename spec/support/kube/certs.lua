-- certs.lua - a CA and a server certificate for 127.0.0.1 and localhost,
-- made with openssl for the stand-in API server's HTTPS (one day, P-256),
-- and when asked a client certificate the same CA signs, with which a
-- client authenticates as a node agent does with a kubeconfig's
-- client-certificate and client-key.
local e2e = require("support.e2e")

local _M = {}

-- The common name of the client certificate: the user a real API server
-- takes it for.
_M.CLIENT_CN = "moonrover-spec-client"

local SERVER_EXTENSIONS = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n" ..
  "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
local CLIENT_EXTENSIONS = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n" ..
  "extendedKeyUsage=clientAuth\n"
local NEW_KEY = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

local function write(path, text)
  local fh = assert(io.open(path, "w"))
  assert(fh:write(text))
  assert(fh:close())
end

-- The openssl commands that make NAME.key and NAME.crt in dir for subject,
-- signed by dir's CA with the extensions of NAME.ext.
local function signed(f, name, subject)
  local q = e2e.quote
  return table.concat({ "openssl req", NEW_KEY, "-keyout", q(f(name .. ".key")), "-out", q(f(name .. ".csr")),
    "-subj", q(subject), "&& openssl x509 -req -in", q(f(name .. ".csr")), "-CA", q(f("ca.crt")), "-CAkey",
    q(f("ca.key")), "-CAcreateserial -days 1 -out", q(f(name .. ".crt")), "-extfile", q(f(name .. ".ext")) }, " ")
end

-- Writes ca.crt, server.crt and server.key (and the files making them) into
-- dir, and client.crt and client.key when opts.client; returns { ca, cert,
-- key, client_cert, client_key } paths (the last two nil without
-- opts.client), or nil and openssl's message.
function _M.make(dir, opts)
  local client = opts and opts.client
  local f = function(name) return dir .. "/" .. name end
  write(f("server.ext"), SERVER_EXTENSIONS)
  local steps = { "openssl req -x509 " .. NEW_KEY .. " -keyout " .. e2e.quote(f("ca.key")) .. " -out " ..
    e2e.quote(f("ca.crt")) .. " -days 1 -subj /CN=moonrover-spec-ca" ..
    " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
    signed(f, "server", "/CN=localhost") }
  if client then
    write(f("client.ext"), CLIENT_EXTENSIONS)
    steps[#steps + 1] = signed(f, "client", "/O=system:nodes/CN=" .. _M.CLIENT_CN)
  end
  local code, _, err = e2e.run("(" .. table.concat(steps, " && ") .. ")")
  if code ~= 0 then
    return nil, "openssl could not make the certificates: " .. err
  end
  return { ca = f("ca.crt"), cert = f("server.crt"), key = f("server.key"),
    client_cert = client and f("client.crt") or nil, client_key = client and f("client.key") or nil }
end

return _M
