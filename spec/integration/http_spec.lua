-- http_spec.lua - the HTTP endpoint (runtime/http_server/): /metrics and
-- /healthz served on a libevent base that this spec drives itself through
-- the FFI, with /usr/bin/python3 as the client in a background process.
local rt = require("moonrover.rt").with_test_api()
local files = require("support.files")
local read_file, write_file = files.read, files.write
local ffi, lib = rt.ffi, rt.lib

ffi.cdef([[
struct event_base *event_base_new(void);
int event_base_loop(struct event_base *base, int flags);
void event_base_free(struct event_base *base);
struct addrinfo {
  int ai_flags, ai_family, ai_socktype, ai_protocol;
  unsigned int ai_addrlen;
  void *ai_addr;
  char *ai_canonname;
  struct addrinfo *ai_next;
};
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res);
void freeaddrinfo(struct addrinfo *res);
const char *gai_strerror(int errcode);
]])
local EVLOOP_NONBLOCK = 0x02
local AI_PASSIVE, SOCK_STREAM = 0x0001, 1
local MAX_TURNS = 30000 -- loop turns (1 ms pauses) to wait for a client

local function load_libevent()
  local ok, ev = pcall(ffi.load, "event")
  if ok then
    return ev
  end
  return ffi.load("libevent-2.1.so.7")
end
local event = load_libevent()

-- Sends a file's bytes to host:port, reads until the server closes, and
-- writes what it got to out (renamed into place when complete). The server
-- may answer and close before it has read the whole request (one too long,
-- a body refused); closing with unread bytes makes its kernel reset the
-- connection. Then sending fails (EPIPE, ECONNRESET), or shutdown(SHUT_WR)
-- does (ENOTCONN: the reset already closed the socket), and reading gives the
-- bytes that came before the reset, then ECONNRESET. None of that is a client
-- error: the answer is what was read, and a missing one fails the spec.
local CLIENT = [[
import errno, os, socket, sys
host, port, req, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
CLOSED_BY_SERVER = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)
with open(req, "rb") as f:
    raw = f.read()
got = b""
try:
    with socket.create_connection((host, port)) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            if e.errno not in CLOSED_BY_SERVER:
                raise
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
except OSError as e:
    got += ("\nclient error: %s" % e).encode()
with open(out + ".part", "wb") as f:
    f.write(got)
os.rename(out + ".part", out)
]]

-- Why host does not resolve for a listener, asked the way the server asks
-- (runtime/http_server/http_listener.c: getaddrinfo, passive, stream), or nil when it does.
local function unresolved(host)
  local hints = ffi.new("struct addrinfo", { ai_flags = AI_PASSIVE, ai_socktype = SOCK_STREAM })
  local res = ffi.new("struct addrinfo *[1]")
  local rc = ffi.C.getaddrinfo(host, nil, hints, res)
  if rc ~= 0 then
    return ffi.string(ffi.C.gai_strerror(rc))
  end
  ffi.C.freeaddrinfo(res[0])
  return nil
end

local function sh_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Splits a raw HTTP response into status code, headers (lower-case names) and body.
local function parse_response(raw)
  local head, body = raw:match("^(.-)\r\n\r\n(.*)$")
  if not head then
    return nil, {}, raw
  end
  local status = tonumber(head:match("^HTTP/1%.%d (%d%d%d)"))
  local headers = {}
  for name, value in head:gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do
    headers[name:lower()] = value
  end
  return status, headers, body
end

describe("HTTP server", function()
  local tmp, base, m, servers
  local nreq = 0 -- numbers the request and response files of the whole file

  setup(function()
    tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p " .. sh_quote(tmp)) == 0)
    write_file(tmp .. "/client.py", CLIENT)
  end)

  teardown(function()
    os.execute("rm -rf " .. sh_quote(tmp))
  end)

  before_each(function()
    base = assert(event.event_base_new())
    m = assert(rt.call(lib.mr_metrics_new))
    servers = {}
  end)

  after_each(function()
    for _, h in ipairs(servers) do
      lib.mr_http_close(h)
    end
    lib.mr_metrics_free(m)
    event.event_base_free(base)
  end)

  local function open(address)
    local h, err = rt.call(lib.mr_http_open, base, address, m, nil)
    if h then
      servers[#servers + 1] = h
    end
    return h, err
  end

  -- Sends raw bytes to the server from a child process while running the loop.
  local function exchange(host, port, raw)
    nreq = nreq + 1
    local req, out = tmp .. "/req" .. nreq, tmp .. "/resp" .. nreq
    write_file(req, raw)
    local cmd = string.format("/usr/bin/python3 %s %s %d %s %s >/dev/null 2>&1 &",
      sh_quote(tmp .. "/client.py"), host, port, sh_quote(req), sh_quote(out))
    assert(os.execute(cmd) == 0)
    for _ = 1, MAX_TURNS do
      event.event_base_loop(base, EVLOOP_NONBLOCK)
      local got = read_file(out)
      if got then
        return got
      end
      lib.mr_sys_sleep_ms(1)
    end
    error("no answer from the client for " .. raw:sub(1, 60))
  end

  local function request(h, method, path)
    local raw = exchange("127.0.0.1", lib.mr_http_port(h),
      method .. " " .. path .. " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
    return parse_response(raw)
  end

  it("serves the registry on GET /metrics", function()
    local h = assert(open("127.0.0.1:0"))
    local id = assert(rt.call(lib.mr_metrics_series, m, lib.MR_COUNTER, "hits_total",
      "Hits.", 'kind="a"'))
    lib.mr_metrics_add(m, id, 3)
    local status, headers, body = request(h, "GET", "/metrics")
    assert.equal(200, status)
    assert.equal("text/plain; version=0.0.4; charset=utf-8", headers["content-type"])
    local hits = '# HELP hits_total Hits.\n# TYPE hits_total counter\nhits_total{kind="a"} 3\n'
    assert.equal(hits, body:sub(-#hits))
    assert.matches("\nmoonrover_http_connections 1\n", body, 1, true) -- this request's
    lib.mr_metrics_add(m, id, 2)
    status, headers, body = request(h, "GET", "/metrics?x=1")
    assert.matches("^text/plain", headers["content-type"])
    assert.equal(200, status)
    assert.matches('hits_total{kind="a"} 5\n', body, 1, true)
  end)

  it("reports health on /healthz: 200 by default, 503 when unhealthy", function()
    local h = assert(open("127.0.0.1:0"))
    local status, headers, body = request(h, "GET", "/healthz")
    assert.equal(200, status)
    assert.equal("ok\n", body)
    assert.matches("^text/plain", headers["content-type"])
    lib.mr_http_set_health(h, 0, "lua stuck\n")
    status, headers, body = request(h, "GET", "/healthz")
    assert.matches("^text/plain", headers["content-type"])
    assert.equal(503, status)
    assert.equal("lua stuck\n", body)
    lib.mr_http_set_health(h, 1, nil)
    status, headers, body = request(h, "GET", "/healthz")
    assert.matches("^text/plain", headers["content-type"])
    assert.equal(200, status)
    assert.equal("ok\n", body)
  end)

  it("answers 404 for other paths and 405 for other methods", function()
    local h = assert(open("127.0.0.1:0"))
    assert.equal(404, (request(h, "GET", "/")))
    assert.equal(404, (request(h, "GET", "/metrics/")))
    assert.equal(404, (request(h, "POST", "/nothing")))
    for _, method in ipairs({ "POST", "PUT", "DELETE", "PATCH", "OPTIONS" }) do
      local status, headers = request(h, method, "/metrics")
      assert.equal(405, status, method)
      assert.equal("GET, HEAD", headers["allow"])
    end
    assert.equal(405, (request(h, "POST", "/healthz")))
    local status, _, body = request(h, "HEAD", "/healthz")
    assert.equal(200, status)
    assert.equal("", body)
  end)

  it("survives long URIs and garbage, then still serves", function()
    local h = assert(open("127.0.0.1:0"))
    local port = lib.mr_http_port(h)
    local cases = {
      { "GET /" .. string.rep("a", 200000) .. " HTTP/1.1\r\n\r\n", 400 },
      { "GET /metrics HTTP/1.1\r\nX: " .. string.rep("b", 50000) .. "\r\n\r\n", 400 },
      { "\0\1\2 garbage \255\254\r\n\r\n", 400 },
      { "GET /metrics HTTP/1.1\r\nContent-Length: 99999999\r\n\r\nxx", 413 },
      { "GET", nil }, -- the client stops writing: the server just closes
    }
    for _, case in ipairs(cases) do
      local raw = exchange("127.0.0.1", port, case[1])
      assert.equal(case[2], (parse_response(raw)), raw:sub(1, 80))
    end
    assert.equal(200, (request(h, "GET", "/healthz")))
  end)

  it("keeps a connection open between requests and answers pipelined ones in order", function()
    local h = assert(open("127.0.0.1:0"))
    local raw = exchange("127.0.0.1", lib.mr_http_port(h), "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n" ..
      "HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n\r\nGET http://a/nothing?x HTTP/1.1\r\nHost: a\r\n\r\n" ..
      "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    local statuses = {}
    for code in raw:gmatch("HTTP/1%.1 (%d%d%d)") do
      statuses[#statuses + 1] = tonumber(code)
    end
    assert.same({ 200, 200, 404, 200 }, statuses)
    assert.equal(1, select(2, raw:gsub("Connection: close", "")))
    local status, headers, body = parse_response(exchange("127.0.0.1", lib.mr_http_port(h),
      "GET /healthz HTTP/1.0\n\n"))
    assert.equal(200, status)
    assert.equal("close", headers["connection"])
    assert.equal("ok\n", body)
  end)

  it("refuses requests that could mean two things, with the status that says why", function()
    local h = assert(open("127.0.0.1:0"))
    local port = lib.mr_http_port(h)
    for _, case in ipairs({
      { "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501 },
      { "GET /metrics HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", 400 },
      { "GET /metrics HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400 },
      { "GET /metrics HTTP/1.1\r\nX: a\rb\r\n\r\n", 400 },
      { "GET /metrics HTTP/2.0\r\n\r\n", 505 },
      { "GET /metrics\r\n\r\n", 400 },
      { "GET  /metrics HTTP/1.1\r\n\r\n", 400 },
      { "GET metrics HTTP/1.1\r\n\r\n", 400 },
    }) do
      local status, headers = parse_response(exchange("127.0.0.1", port, case[1]))
      assert.equal(case[2], status, case[1])
      assert.equal("close", headers["connection"], case[1])
    end
    local status, _, body = parse_response(exchange("127.0.0.1", port,
      "POST /healthz HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"))
    assert.equal(405, status)
    assert.equal("method not allowed\n", body)
    assert.equal(405, (parse_response(exchange("127.0.0.1", port, "get /healthz HTTP/1.1\r\n\r\n"))))
  end)

  it("binds an ephemeral port and refuses a second server on it", function()
    local h = assert(open("127.0.0.1:0"))
    local port = lib.mr_http_port(h)
    assert.is_true(port > 0)
    local address = "127.0.0.1:" .. port
    local h2, err = open(address)
    assert.is_nil(h2)
    assert.equal("cannot listen on " .. address .. ": Address already in use", err)
  end)

  it("listens on localhost", function()
    local why = unresolved("localhost")
    if why then
      pending('"localhost" does not resolve here (no /etc/hosts?): getaddrinfo: ' .. why)
      return
    end
    local h = assert(open("localhost:0"))
    assert.is_true(lib.mr_http_port(h) > 0)
  end)

  it("listens on IPv6 addresses", function()
    local lo6 = read_file("/proc/net/if_inet6") or ""
    if not lo6:find("^00000000000000000000000000000001 ") and
        not lo6:find("\n00000000000000000000000000000001 ") then
      pending("no IPv6 loopback on this machine")
      return
    end
    local h6 = assert(open("[::1]:0"))
    local status, _, body = parse_response(exchange("::1", lib.mr_http_port(h6),
      "GET /healthz HTTP/1.0\r\n\r\n"))
    assert.equal(200, status)
    assert.equal("ok\n", body)
  end)

  it("rejects malformed addresses with a one-line reason", function()
    for _, address in ipairs({ "", "9090", "127.0.0.1", "127.0.0.1:", ":9090", "127.0.0.1:x",
      "127.0.0.1:65536", "::1:9090", "[::1]", "[::1:9090", "127.0.0.1:-1" }) do
      local h, err = open(address)
      assert.is_nil(h, address)
      assert.equal("cannot listen on " .. address .. ": expected host:port or [ipv6]:port", err)
    end
    local h, err = open("no-such-host.invalid:0")
    assert.is_nil(h)
    assert.matches("^cannot listen on no%-such%-host%.invalid:0: [^\n]+$", err)
  end)
end)
