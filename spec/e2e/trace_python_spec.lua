-- End-to-end specs for `moonrover trace` against a Python server whose every
-- response byte is its own (spec/support/trace_http_server.py, which logs
-- the bytes it wrote): a chunked body sent chunk by chunk, 1.5 MiB in 64 KiB
-- writes, a response cut by the server's close, and one that takes 1 s.
-- Server and client (curl) are both traced; the trace ends when they are
-- gone.
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local SLOW_NS = 1e9

describe("moonrover trace against a Python server (end to end)", function()
  local dir, server, port

  before_each(function()
    dir = e2e.tmpdir()
    server, port = te.python_server(dir)
  end)

  after_each(function()
    te.stop_all()
    e2e.kill(server)
    e2e.rmdir(dir)
  end)

  -- curl on the paths (one connection) once traced with the server; returns
  -- the server's and the client's exchanges, the summary and what the
  -- server logged.
  local function traced_curl(paths)
    local words = { "/usr/bin/curl -s" }
    for _, p in ipairs(paths) do
      words[#words + 1] = "-o /dev/null http://127.0.0.1:" .. port .. p
    end
    local client = te.blocked(dir, "curl", table.concat(words, " "))
    local trace = te.trace(dir, "trace", { server, client.pid })
    client.release()
    client.wait()
    e2e.kill(server)
    local list, summary = trace.result()
    return te.select(list, { pid = server, role = "server", comm = "python3" }),
      te.select(list, { pid = client.pid, role = "client", comm = "curl" }), summary, te.sent(dir), list
  end

  local function check_sizes(servers, clients, sent)
    assert.same({ #sent, #sent }, { #servers, #clients })
    for i, s in ipairs(sent) do
      for _, ex in ipairs({ servers[i], clients[i] }) do
        assert.same({ s.path, s.bytes, "GET" }, { ex.target, ex.response_bytes, ex.method })
        assert.matches(te.TS, ex.ts)
      end
      assert.equal(servers[i].request_bytes, clients[i].request_bytes)
    end
  end

  it("follows a chunked body sent in pieces to its end", function()
    local servers, clients, summary, sent, list = traced_curl({ "/chunked", "/chunked", "/nope" })
    check_sizes(servers, clients, sent)
    assert.same({ ["200"] = 4, ["404"] = 2 }, te.by_status(list))
    assert.matches("lost: nothing", summary)
  end)

  it("counts every byte of a 1.5 MiB response written in many syscalls", function()
    local servers, clients, summary, sent, list = traced_curl({ "/big", "/big" })
    check_sizes(servers, clients, sent)
    assert.equal(1572864, sent[1].bytes - #"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n" -
      #"Content-Length: 1572864\r\n\r\n")
    assert.same({ ["200"] = 4 }, te.by_status(list))
    assert.matches("lost: nothing", summary)
  end)

  it("ends a response cut by the server's close with closed mid-response", function()
    local servers, clients, summary, sent = traced_curl({ "/cut" })
    check_sizes(servers, clients, sent)
    for _, ex in ipairs({ servers[1], clients[1] }) do
      assert.same({ 200, "closed mid-response" }, { ex.status, ex.error })
    end
    assert.matches("http: 2 exchange%(s%): closed mid%-response x2\n", summary)
  end)

  it("times an exchange from its request to its response's end: at least the server's 1 s", function()
    local servers, clients, summary, sent, list = traced_curl({ "/slow", "/slow", "/slow" })
    check_sizes(servers, clients, sent)
    for _, ex in ipairs(list) do
      assert.is_true(ex.duration_ms >= SLOW_NS / 1e6, ex.duration_ms)
    end
    assert.same({ ["200"] = 6 }, te.by_status(list))
    assert.matches("lost: nothing", summary)
  end)
end)
