-- End-to-end specs for `moonrover trace` against nginx (one process, its
-- own configuration, sendfile on) and real clients: curl on keep-alive and
-- fresh connections, over IPv4 and IPv6, with a traceparent header; a raw
-- client pipelining three requests; a refused connect. Both ends of each
-- exchange are traced (-p nginx's pid and the client's): every exchange is
-- seen twice, as "server" in nginx and as "client" in the client, with the
-- sizes curl itself counted. The trace ends when the processes are gone.
local files = require("support.files")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local BIG = 1048576 + 12345 -- sent by nginx with sendfile: no byte of it is copied
local TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
local TRACEPARENT = "traceparent: 00-" .. TRACE_ID .. "-00f067aa0ba902b7-01"
local CURL_W = "%{http_code} %{size_request} %{size_header} %{size_download} %{local_port}\\n"

-- curl's -w lines: list of { status, request, header, body, port }.
local function curl_lines(out)
  local list = {}
  for s, r, h, b, p in out:gmatch("(%d+) (%d+) (%d+) (%d+) (%d+)\n") do
    list[#list + 1] = { status = tonumber(s), request = tonumber(r), header = tonumber(h), body = tonumber(b),
      port = tonumber(p) }
  end
  return list
end

-- Checks one exchange line against the contract and what curl counted.
local function check_exchange(ex, want)
  assert.matches(te.TS, ex.ts)
  assert.same({ want.pid, want.comm, want.role, "http", "GET", want.target, want.status, want.request,
    want.response, false, want["local"], want.remote, want.trace_id },
    { ex.pid, ex.comm, ex.role, ex.protocol, ex.method, ex.target, ex.status, ex.request_bytes,
      ex.response_bytes, ex.tls, ex["local"], ex.remote, ex.trace_id })
  assert.is_true(ex.duration_ms > 0)
  assert.is_nil(ex.error)
end

describe("moonrover trace against nginx (end to end)", function()
  local scene = te.each_test(before_each, after_each, { page = "hello from nginx\n" })

  before_each(function()
    files.write(scene.dir .. "/www/big.bin", ("0123456789abcdef"):rep(math.floor(BIG / 16)) .. ("z"):rep(BIG % 16))
  end)

  -- The exchanges, summary, pid and standard output of the client cmd
  -- traced with nginx.
  local function traced(cmd)
    return scene:traced("client", cmd)
  end

  local function curl(host, paths, extra)
    local words = { "/usr/bin/curl -s" }
    for _, p in ipairs(paths) do
      words[#words + 1] = "-o /dev/null -w '" .. CURL_W .. "' " .. (extra or "") .. "http://" .. host .. ":" ..
        scene.port .. p
    end
    return table.concat(words, " ")
  end

  -- Each of curl's transfers (got) seen once on each side, in order.
  local function check_sides(list, client_pid, got, paths, addr, trace_id)
    local servers = te.select(list, { pid = scene.nginx, role = "server" })
    local clients = te.select(list, { pid = client_pid, role = "client" })
    assert.same({ #paths, #paths, #paths, #paths * 2 }, { #got, #servers, #clients, #list })
    for i, path in ipairs(paths) do
      local c = got[i]
      local want = { target = path, status = c.status, request = c.request, response = c.header + c.body,
        trace_id = trace_id }
      want.pid, want.comm, want.role, want["local"], want.remote = client_pid, "curl", "client", addr(c.port),
        addr(scene.port)
      check_exchange(clients[i], want)
      want.pid, want.comm, want.role, want["local"], want.remote = scene.nginx, "nginx", "server", addr(scene.port),
        addr(c.port)
      check_exchange(servers[i], want)
    end
  end

  local function v4(p)
    return "127.0.0.1:" .. p
  end

  it("sees curl's keep-alive transfers on both sides, a sendfile body counted whole", function()
    local paths = { "/index.html", "/big.bin", "/nope", "/index.html" }
    local list, summary, pid, out = traced(curl("127.0.0.1", paths))
    local got = curl_lines(out)
    check_sides(list, pid, got, paths, v4)
    assert.same({ got[1].port, got[1].port, got[1].port }, { got[2].port, got[3].port, got[4].port })
    assert.equal(BIG, got[2].body)
    assert.same({ ["200"] = 6, ["404"] = 2 }, te.by_status(list))
    assert.matches("http: 8 exchange%(s%): 200 x6, 404 x2\n", summary)
    assert.matches("lost: nothing", summary)
  end)

  it("sees a fresh connection per transfer when each one closes", function()
    local paths = { "/index.html", "/nope", "/big.bin" }
    local list, summary, pid, out = traced(curl("127.0.0.1", paths, "-H 'Connection: close' "))
    local got = curl_lines(out)
    check_sides(list, pid, got, paths, v4)
    assert.is_true(got[1].port ~= got[2].port and got[2].port ~= got[3].port and got[1].port ~= got[3].port)
    assert.same({ ["200"] = 4, ["404"] = 2 }, te.by_status(list))
    assert.matches("lost: nothing", summary)
  end)

  it("writes IPv6 addresses in brackets", function()
    local paths = { "/index.html", "/nope" }
    local list, _, pid, out = traced(curl("[::1]", paths))
    check_sides(list, pid, curl_lines(out), paths, function(p)
      return "[::1]:" .. p
    end)
  end)

  it("gives the trace id of a traceparent header", function()
    local paths = { "/index.html" }
    local list, _, pid, out = traced(curl("127.0.0.1", paths, "-H '" .. TRACEPARENT .. "' "))
    check_sides(list, pid, curl_lines(out), paths, v4, TRACE_ID)
  end)

  it("pairs three pipelined requests written at once with their responses", function()
    local script = scene.dir .. "/pipeline.py"
    files.write(script, table.concat({
      "import socket, sys",
      "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))",
      "reqs = [b'GET /%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' % p for p in (b'index.html', b'nope', b'big.bin')]",
      "s.sendall(b''.join(reqs))",
      "got = b''",
      "while got.count(b'HTTP/1.1 ') < 3 or len(got) < " .. BIG .. ":",
      "    got += s.recv(65536)",
      "s.close()",
      "print(' '.join(str(len(r)) for r in reqs), len(got))",
    }, "\n"))
    local list, summary, pid, out = traced("/usr/bin/python3 " .. script .. " " .. scene.port)
    local r1, r2, r3, received = out:match("(%d+) (%d+) (%d+) (%d+)")
    local servers = te.select(list, { pid = scene.nginx, role = "server" })
    local clients = te.select(list, { pid = pid, role = "client" })
    assert.same({ 3, 3 }, { #servers, #clients })
    local total = 0
    for i, want in ipairs({ { "/index.html", 200, r1 }, { "/nope", 404, r2 }, { "/big.bin", 200, r3 } }) do
      for _, ex in ipairs({ servers[i], clients[i] }) do
        assert.same({ want[1], want[2], tonumber(want[3]) }, { ex.target, ex.status, ex.request_bytes })
      end
      assert.equal(servers[i].response_bytes, clients[i].response_bytes)
      total = total + clients[i].response_bytes
    end
    assert.equal(tonumber(received), total)
    assert.matches("lost: nothing", summary)
  end)

  it("sees no exchange of a connect refused, and goes on", function()
    local closed = te.free_port()
    local list, summary = traced("/usr/bin/curl -s -o /dev/null http://127.0.0.1:" .. closed .. "/")
    assert.same({}, list)
    assert.matches("no exchange seen", summary)
    assert.matches("lost: nothing", summary)
  end)
end)
