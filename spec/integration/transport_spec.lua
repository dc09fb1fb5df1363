-- transport_spec.lua - the gRPC transport (runtime/transport*.c) against
-- spec/support/grpc_echo.py, a raw-bytes test server run with Debian's
-- /usr/bin/python3, on 127.0.0.1 only. Results are collected the way the
-- agent does it: poll the notify fd (bounded), read it, then drain
-- mr_transport_next. TLS material comes from openssl into a temp dir.
local rt = require("moonrover.rt").with_test_api()
local read_file = require("support.files").read
local ffi, lib = rt.ffi, rt.lib

pcall(ffi.cdef, "struct pollfd { int fd; short events; short revents; };")
pcall(ffi.cdef, "int poll(struct pollfd *fds, unsigned long nfds, int timeout);")
pcall(ffi.cdef, "ssize_t read(int fd, void *buf, size_t count);")

local POLLIN = 1
local OK, CANCELLED, DEADLINE_EXCEEDED, NOT_FOUND, UNAVAILABLE = 0, 1, 4, 5, 14
local WAIT_MS = 15000 -- the longest any result or server may take
local PYTHON = "/usr/bin/python3"
local SOURCE_DIR = os.getenv("MOONROVER_SOURCE_DIR") or "."
local SERVER = SOURCE_DIR .. "/spec/support/grpc_echo.py"

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

local function now_ms()
  return tonumber(lib.mr_sys_monotonic_ns()) / 1e6
end

local function make_tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(sh("mkdir -m 700 " .. dir))
  return dir
end

-- ------------------------------------------------------------ test server

local Server = {}
Server.__index = Server

-- Starts grpc_echo.py with args; waits (bounded) for the port it prints.
local function start_server(dir, args, port)
  local s = setmetatable({ dir = dir, args = args or "" }, Server)
  s.out, s.err, s.pidfile = dir .. "/server.port", dir .. "/server.err", dir .. "/server.pid"
  os.remove(s.out)
  assert(sh(string.format("%s %s --port %d %s > %s 2> %s & echo $! > %s", PYTHON, SERVER, port or 0,
    s.args, s.out, s.err, s.pidfile)))
  s.pid = tonumber(read_file(s.pidfile))
  local deadline = now_ms() + WAIT_MS
  while not s.port and now_ms() < deadline do
    s.port = tonumber((read_file(s.out) or ""):match("^(%d+)\n"))
    if not s.port then
      lib.mr_sys_sleep_ms(20)
    end
  end
  assert(s.port, "the test server did not start: " .. (read_file(s.err) or ""))
  return s
end

local function gone(pid)
  local stat = read_file("/proc/" .. pid .. "/stat")
  return not stat or stat:match("^%d+ %b() (%a)") == "Z"
end

-- Stops the server and waits (bounded) until it is gone: its port is closed.
function Server:stop()
  if not self.pid then
    return
  end
  sh("kill -TERM " .. self.pid .. " 2>/dev/null")
  local deadline = now_ms() + WAIT_MS
  while not gone(self.pid) and now_ms() < deadline do
    lib.mr_sys_sleep_ms(10)
  end
  assert(gone(self.pid), "the test server did not stop")
  self.pid = nil
end

function Server:restart()
  local again = start_server(self.dir, self.args, self.port)
  self.pid = again.pid
end

function Server:address()
  return "127.0.0.1:" .. self.port
end

-- -------------------------------------------------------------- transport

local Client = {}
Client.__index = Client

-- Opens a transport; returns it, or nil and the error line.
local function open(opts)
  local o = ffi.new("struct mr_transport_opts", opts)
  local t, err = rt.call(lib.mr_transport_open, o)
  if not t then
    return nil, err
  end
  return setmetatable({ t = t, results = {}, result = ffi.new("struct mr_rpc_result") }, Client)
end

function Client:close()
  if self.t then
    lib.mr_transport_close(self.t)
    self.t = nil
  end
end

-- Moves every waiting result into self.results (by id), copying its bytes.
function Client:drain()
  local r = self.result
  while lib.mr_transport_next(self.t, r) == 1 do
    local id = tonumber(r.id)
    assert.is_nil(self.results[id], "result " .. id .. " came twice")
    self.results[id] = {
      state = r.state,
      code = r.code,
      details = ffi.string(r.details),
      response = r.response ~= nil and ffi.string(r.response, r.response_len) or nil,
    }
  end
end

-- Waits (bounded) on the notify fd for the result of call id.
function Client:await(id)
  id = tonumber(id)
  local pfd = ffi.new("struct pollfd[1]", { { fd = lib.mr_transport_notify_fd(self.t), events = POLLIN } })
  local buf = ffi.new("uint64_t[1]")
  local deadline = now_ms() + WAIT_MS
  self:drain()
  while not self.results[id] and now_ms() < deadline do
    if ffi.C.poll(pfd, 1, 100) == 1 then
      assert.are.equal(8, tonumber(ffi.C.read(pfd[0].fd, buf, 8)))
    end
    self:drain()
  end
  return assert(self.results[id], "no result for call " .. id)
end

-- The transport's calls through rt.call: a result, or nil and the message.
local function unary(t, method, request, timeout_ms)
  return rt.call(lib.mr_transport_unary, t, method, request, request and #request or 0, timeout_ms)
end

local function stream_open(t, method, timeout_ms)
  return rt.call(lib.mr_transport_stream_open, t, method, timeout_ms)
end

local function send(t, id, message)
  return rt.call(lib.mr_transport_stream_send, t, id, message, #message)
end

local function finish(t, id)
  return rt.call(lib.mr_transport_stream_finish, t, id)
end

-- Asserts a call was refused, the message ending with why.
local function refused(why, ok, err)
  assert.is_nil(ok)
  assert.are.equal(why, err:sub(-#why))
end

function Client:unary(method, request, timeout_ms)
  local id = assert(unary(self.t, "/test.Echo/" .. method, request, timeout_ms or 10000))
  return self:await(id)
end

function Client:stream(method, messages, timeout_ms)
  local id = assert(stream_open(self.t, "/test.Echo/" .. method, timeout_ms or 10000))
  for _, m in ipairs(messages) do
    assert.are.equal(0, send(self.t, id, m))
  end
  assert.are.equal(0, finish(self.t, id))
  return self:await(id)
end

function Client:stats()
  local s = ffi.new("struct mr_transport_stats")
  lib.mr_transport_stats(self.t, s)
  return s
end

-- Calls Unary until it succeeds (the channel reconnects with backoff).
function Client:until_ok()
  local deadline = now_ms() + WAIT_MS
  repeat
    local r = self:unary("Unary", "again")
    if r.state == lib.MR_RPC_OK then
      return r
    end
    lib.mr_sys_sleep_ms(100)
  until now_ms() > deadline
  error("the transport did not recover")
end

-- ------------------------------------------------------------ certificates

local function openssl(dir, args)
  assert(sh("cd " .. dir .. " && openssl " .. args .. " >/dev/null 2>&1"), "openssl " .. args)
end

local EC = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

-- A CA, a server certificate for 127.0.0.1 and a client certificate signed
-- by it, and a self-signed server certificate for some other name.
local function make_certs(dir)
  local f = assert(io.open(dir .. "/server.ext", "w"))
  f:write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
  f:close()
  f = assert(io.open(dir .. "/client.ext", "w"))
  f:write("extendedKeyUsage=clientAuth\n")
  f:close()
  openssl(dir, "req -x509 " .. EC .. " -keyout ca.key -out ca.crt -days 2 -subj /CN=moonrover-test-ca")
  for _, name in ipairs({ "server", "client" }) do
    openssl(dir, "req " .. EC .. " -keyout " .. name .. ".key -out " .. name .. ".csr -subj /CN=" .. name)
    openssl(dir, "x509 -req -in " .. name .. ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "
      .. name .. ".crt -extfile " .. name .. ".ext")
  end
  openssl(dir, "req -x509 " .. EC .. " -keyout self.key -out self.crt -days 2 -subj /CN=self-signed"
    .. " -addext subjectAltName=DNS:elsewhere.invalid")
  f = assert(io.open(dir .. "/not.pem", "w"))
  f:write("not a certificate\n")
  f:close()
end

-- ------------------------------------------------------------------ specs

describe("transport", function()
  local dir, server, client

  setup(function()
    dir = make_tmpdir()
  end)

  teardown(function()
    sh("rm -rf " .. dir)
  end)

  after_each(function()
    if client then
      client:close()
      client = nil
    end
    if server then
      server:stop()
      server = nil
    end
  end)

  describe("in plaintext", function()
    before_each(function()
      server = start_server(dir)
      client = assert(open({ address = server:address() }))
    end)

    it("makes unary calls and counts them", function()
      local r = client:unary("Unary", "hello\0world")
      assert.are.same({ state = lib.MR_RPC_OK, code = OK, details = "", response = "hello\0world" }, r)
      local empty = client:unary("Unary", "")
      assert.are.equal("", empty.response)
      local s = client:stats()
      assert.are.equal(2, tonumber(s.calls_started))
      assert.are.equal(2, tonumber(s.calls_ok))
      assert.are.equal(2, tonumber(s.messages_sent))
      assert.are.equal(11, tonumber(s.bytes_sent))
      assert.are.equal(0, tonumber(s.bytes_queued))
      assert.are.equal(1, s.connected)
    end)

    it("streams messages in order and gets one response", function()
      local messages = {}
      for i = 1, 40 do
        messages[i] = string.format("<%d>", i)
      end
      local r = client:stream("Stream", messages)
      assert.are.equal(lib.MR_RPC_OK, r.state)
      assert.are.equal(table.concat(messages), r.response)
      assert.are.equal(40, tonumber(client:stats().messages_sent))
    end)

    it("keeps several calls apart", function()
      local ids = {}
      for i = 1, 10 do
        local req = "call " .. i
        ids[i] = assert(unary(client.t, "/test.Echo/Unary", req, 10000))
      end
      for i = 1, 10 do
        assert.are.equal("call " .. i, client:await(ids[i]).response)
      end
    end)

    it("reports a failing status with its code and details", function()
      local r = client:unary("Fail", NOT_FOUND .. " no such task")
      assert.are.same({ state = lib.MR_RPC_FAILED, code = NOT_FOUND, details = "no such task" }, r)
      assert.are.equal(1, tonumber(client:stats().calls_failed))
    end)

    it("ends a call at its deadline", function()
      local r = client:unary("Slow", "", 200)
      assert.are.equal(lib.MR_RPC_FAILED, r.state)
      assert.are.equal(DEADLINE_EXCEEDED, r.code)
    end)

    it("refuses what does not fit the queue and counts it", function()
      client:close()
      client = assert(open({ address = server:address(), queue_bytes = 256 * 1024 }))
      local big = string.rep("x", 256 * 1024 + 1)
      local budget = "over the queue's byte budget (dropped and counted)"
      refused(budget, unary(client.t, "/test.Echo/Unary", big, 1000))
      assert.are.equal(1, tonumber(client:stats().calls_dropped))
      -- Slow reads nothing: once flow control's window is full, messages wait in the queue.
      local id = assert(stream_open(client.t, "/test.Echo/Slow", 10000))
      local chunk = string.rep("y", 16 * 1024)
      local sent, err
      for _ = 1, 4096 do
        sent, err = send(client.t, id, chunk)
        if not sent then
          break
        end
        assert.is_true(client:stats().bytes_queued <= 256 * 1024)
      end
      refused(budget, sent, err)
      local s = client:stats()
      assert.are.equal(2, tonumber(s.calls_dropped))
      assert.is_true(s.bytes_queued > 0 and s.bytes_queued <= 256 * 1024)
      assert.are.equal(0, finish(client.t, id))
    end)

    it("drops what is in flight when closed", function()
      for _ = 1, 3 do
        assert(unary(client.t, "/test.Echo/Slow", "", 10000))
      end
      local stream = assert(stream_open(client.t, "/test.Echo/Stream", 10000))
      assert.are.equal(0, send(client.t, stream, "part"))
      client:drain()
      assert.are.same({}, client.results)
      client:close()
      -- A new transport to the same server starts afresh.
      client = assert(open({ address = server:address() }))
      assert.are.equal("hello", client:unary("Unary", "hello").response)
    end)

    it("rejects misuse of calls", function()
      local bad = 'bad arguments (a method is "/package.Service/Method")'
      refused("cannot call Unary: " .. bad, unary(client.t, "Unary", "x", 1000))
      refused("cannot open a stream to (null): " .. bad, stream_open(client.t, nil, 1000))
      refused("no such call", send(client.t, 12345, "x"))
      refused("no such call", finish(client.t, 12345))
      local id = assert(stream_open(client.t, "/test.Echo/Stream", 10000))
      assert.are.equal(0, finish(client.t, id))
      refused("cannot finish a stream: it is finished already", finish(client.t, id))
      refused("the call has ended or was finished", send(client.t, id, "late"))
      assert.are.equal("", client:await(id).response)
    end)
  end)

  describe("while the server comes and goes", function()
    it("fails fast while it is down and recovers when it is back", function()
      server = start_server(dir)
      server:stop()
      client = assert(open({ address = server:address() }))
      local r = client:unary("Unary", "anyone?", 120000)
      assert.are.equal(lib.MR_RPC_FAILED, r.state)
      assert.are.equal(UNAVAILABLE, r.code)
      assert.are.equal(0, client:stats().connected)
      server:restart()
      assert.are.equal("again", client:until_ok().response)
    end)

    it("survives a restart in the middle of a stream", function()
      server = start_server(dir)
      client = assert(open({ address = server:address() }))
      assert.are.equal("before", client:unary("Unary", "before").response)
      local id = assert(stream_open(client.t, "/test.Echo/Stream", 10000))
      assert.are.equal(0, send(client.t, id, "half"))
      server:stop()
      local r = client:await(id)
      assert.are.equal(lib.MR_RPC_FAILED, r.state)
      -- the server's shutdown cancels the stream, or the connection drops first
      assert.is_true(r.code == UNAVAILABLE or r.code == CANCELLED, "status " .. tostring(r.code))
      refused("no such call", send(client.t, id, "more"))
      server:restart()
      client:until_ok()
      assert.are.equal("ab", client:stream("Stream", { "a", "b" }).response)
    end)
  end)

  describe("with an authentication header", function()
    it("sends it on every call", function()
      server = start_server(dir)
      client = assert(open({ address = server:address(), authentication = "s3cret" }))
      assert.are.equal("s3cret", client:unary("Auth", "").response)
      assert.are.equal("s3cret", client:unary("Auth", "").response)
      client:close()
      client = assert(open({ address = server:address(), authentication = "" }))
      assert.are.equal("", client:unary("Auth", "").response)
    end)
  end)

  describe("over TLS", function()
    setup(function()
      make_certs(dir)
    end)

    local function tls_server(extra)
      return start_server(dir, "--tls " .. dir .. "/server.crt " .. dir .. "/server.key " .. (extra or ""))
    end

    it("verifies the server against a CA file", function()
      server = tls_server()
      client = assert(open({ address = server:address(), tls = 1, ca_path = dir .. "/ca.crt",
        authentication = "over-tls" }))
      assert.are.equal("over-tls", client:unary("Auth", "").response)
      client:close()
      client = assert(open({ address = server:address(), tls = 1, ca_path = dir .. "/self.crt" }))
      assert.are.equal(UNAVAILABLE, client:unary("Unary", "x").code)
    end)

    it("accepts a self-signed certificate only with insecure_skip_verify", function()
      server = start_server(dir, "--tls " .. dir .. "/self.crt " .. dir .. "/self.key")
      client = assert(open({ address = server:address(), tls = 1, insecure_skip_verify = 1 }))
      assert.are.equal("trusting", client:unary("Unary", "trusting").response)
      client:close()
      client = assert(open({ address = server:address(), tls = 1 }))
      local r = client:unary("Unary", "verifying")
      assert.are.equal(lib.MR_RPC_FAILED, r.state)
      assert.are.equal(UNAVAILABLE, r.code)
    end)

    it("presents a client certificate for mTLS", function()
      server = tls_server("--client-ca " .. dir .. "/ca.crt")
      client = assert(open({ address = server:address(), tls = 1, ca_path = dir .. "/ca.crt",
        cert_path = dir .. "/client.crt", key_path = dir .. "/client.key" }))
      assert.are.equal("mutual", client:unary("Unary", "mutual").response)
      client:close()
      client = assert(open({ address = server:address(), tls = 1, insecure_skip_verify = 1,
        cert_path = dir .. "/client.crt", key_path = dir .. "/client.key" }))
      assert.are.equal("skip", client:unary("Unary", "skip").response)
      client:close()
      client = assert(open({ address = server:address(), tls = 1, ca_path = dir .. "/ca.crt" }))
      local r = client:unary("Unary", "anonymous")
      assert.are.equal(lib.MR_RPC_FAILED, r.state)
      assert.are.equal(UNAVAILABLE, r.code)
    end)

    it("explains bad options in one line", function()
      local function fails(opts, pattern)
        local t, err = open(opts)
        assert.is_nil(t)
        assert.matches(pattern, err)
        assert.is_nil(err:find("\n"))
      end
      local ok = "127.0.0.1:1"
      fails({ address = "nonsense" }, 'invalid transport address "nonsense": expected host:port')
      fails({ address = "127.0.0.1:99999" }, "invalid transport address")
      fails({ address = "127.0.0.1:" }, "invalid transport address")
      fails({ address = "::1:80" }, "invalid transport address")
      fails({}, 'invalid transport address "": expected host:port')
      fails({ address = ok, tls = 1, ca_path = dir .. "/missing.crt" },
        "cannot read the CA file .*/missing.crt: No such file or directory")
      fails({ address = ok, tls = 1, ca_path = dir .. "/not.pem" }, "cannot read the CA file .*: no PEM data in it")
      fails({ address = ok, tls = 1, ca_path = dir }, "cannot read the CA file .*: Is a directory")
      fails({ address = ok, tls = 1, cert_path = dir .. "/client.crt" }, "needs both cert_path and key_path")
      fails({ address = ok, tls = 1, cert_path = dir .. "/client.crt", key_path = dir .. "/nokey" },
        "cannot read the key file .*/nokey: No such file or directory")
      local t, err = rt.call(lib.mr_transport_open, nil)
      assert.is_nil(t)
      assert.are.equal("invalid transport options: none given", err)
    end)
  end)
end)
