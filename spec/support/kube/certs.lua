-- certs.lua - a CA and a server certificate for 127.0.0.1 and localhost,
-- made with openssl for the stand-in API server's HTTPS (one day, P-256).
local e2e = require("support.e2e")

local _M = {}

local EXTENSIONS = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n" ..
  "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"

-- Writes ca.crt, server.crt and server.key (and the files making them) into
-- dir; returns { ca, cert, key } paths, or nil and openssl's message.
function _M.make(dir)
  local q = e2e.quote
  local f = function(name) return dir .. "/" .. name end
  local ext = assert(io.open(f("server.ext"), "w"))
  ext:write(EXTENSIONS)
  ext:close()
  local key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  local code, _, err = e2e.run(table.concat({
    "(openssl req -x509", key, "-keyout", q(f("ca.key")), "-out", q(f("ca.crt")), "-days 1",
    "-subj /CN=moonrover-spec-ca -addext basicConstraints=critical,CA:TRUE",
    "-addext keyUsage=critical,keyCertSign,cRLSign",
    "&& openssl req", key, "-keyout", q(f("server.key")), "-out", q(f("server.csr")), "-subj /CN=localhost",
    "&& openssl x509 -req -in", q(f("server.csr")), "-CA", q(f("ca.crt")), "-CAkey", q(f("ca.key")),
    "-CAcreateserial -days 1 -out", q(f("server.crt")), "-extfile", q(f("server.ext")), ")" }, " "))
  if code ~= 0 then
    return nil, "openssl could not make the certificates: " .. err
  end
  return { ca = f("ca.crt"), cert = f("server.crt"), key = f("server.key") }
end

return _M
