-- End-to-end specs for the lines `moonrover trace` writes: in time order
-- within each second of output (wrk against nginx, both traced: each
-- request's client side starts before its server side but ends after it);
-- text headers with units; the JSON's tid (a threaded server that logs its
-- handling thread), host (the Host header) and container_id (the server
-- started in a systemd-like service, spec/support/servers.lua); and what a
-- real client sends to rewrite a
-- terminal (an OSC title sequence, a bare CR, bytes that are not UTF-8)
-- escaped in text.
local e2e = require("support.e2e")
local files = require("support.files")
local servers = require("support.servers")
local skip = require("support.skip")
local te = require("support.trace_e2e")

local it_cgroup = skip.guard(it, pending, te.skip_reason() or servers.cgroup_skip_reason())
local it = skip.guard(it, pending, te.skip_reason())

-- A server handling each connection in a thread of its own, which logs
-- "PATH TID" (the kernel's thread id) for each request it answers.
local THREADED_SERVER = [[
import os, socketserver, sys, threading
class H(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b""):
            pass
        with open(sys.argv[1] + "/tids", "a") as f:
            f.write("%s %d\n" % (line.split()[1].decode(), threading.get_native_id()))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1] + "/port.tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
s.serve_forever()
]]

-- The number of lines whose ts is earlier than the line's before.
local function inversions(list)
  local n = 0
  for i = 2, #list do
    if list[i].ts < list[i - 1].ts then
      n = n + 1
    end
  end
  return n
end

describe("moonrover trace's lines (end to end)", function()
  local scene = te.each_test(before_each, after_each)
  local service

  after_each(function()
    if service then
      service:remove()
      service = nil
    end
  end)

  it("writes lines in time order within each second of output", function()
    scene:serve("hello\n", { http = "  limit_req_zone $binary_remote_addr zone=spec:1m rate=1000r/s;",
      server = "    limit_req zone=spec burst=1000;" })
    local list, summary = scene:traced("wrk", "/usr/bin/wrk -t1 -c4 -d2 http://127.0.0.1:" .. scene.port ..
      "/index.html")
    assert.is_true(#list > 100, summary)
    -- One flush a second, and one at the end: an earlier line can only
    -- follow a later one where a flush ends.
    local flushes = math.ceil(tonumber(summary:match("moonrover trace: ([%d.]+) s"))) + 1
    assert.is_true(inversions(list) <= flushes, inversions(list) .. " lines out of order\n" .. summary)
  end)

  it("writes text headers with the units of their columns", function()
    scene.nginx = te.nginx(scene.dir, scene.port)
    local client = te.blocked(scene.dir, "client", "/usr/bin/curl -s -o /dev/null http://127.0.0.1:" ..
      scene.port .. "/")
    local trace = te.trace_words(scene.dir, "text", { "-p", tostring(client.pid) })
    client.release()
    client.wait()
    local out = trace.output()
    assert.matches("^TIME +PID COMM +ROLE +LOCAL +REMOTE +PROTO METHOD  STATUS +DUR_MS +REQ_B +RESP_B  TARGET\n", out)
    assert.matches("\n%d%d:%d%d:%d%d%.%d%d%d +" .. client.pid .. " curl +client ", out)
  end)

  it_cgroup("gives the thread, the Host header and the container of each exchange in JSON", function()
    files.write(scene.dir .. "/server.py", THREADED_SERVER)
    service = servers.service(scene.dir, "lines")
    local server = { pid = service:start(servers.PYTHON .. " " .. scene.dir .. "/server.py " .. scene.dir) }
    te.wait_for("the threaded server's port", function() return files.read(scene.dir .. "/port") end)
    local base = "http://127.0.0.1:" .. files.read(scene.dir .. "/port")
    local client = te.blocked(scene.dir, "client", "/usr/bin/curl -s -o /dev/null -H 'Host: shop.example' " .. base ..
      "/a -o /dev/null " .. base .. "/b")
    local trace = te.trace(scene.dir, "trace", { server.pid, client.pid })
    client.release()
    client.wait()
    service:stop(server.pid)
    local list = trace.result()
    local tids = {}
    for path, tid in files.read(scene.dir .. "/tids"):gmatch("(%S+) (%d+)") do
      tids[path] = tonumber(tid)
    end
    local served = te.select(list, { role = "server", pid = server.pid })
    assert.equal(2, #served)
    for _, ex in ipairs(served) do
      assert.same({ tids[ex.target], "shop.example" }, { ex.tid, ex.host })
      assert.is_true(ex.tid ~= ex.pid)
      assert.equal(service.id, ex.container_id)
    end
    for _, ex in ipairs(te.select(list, { role = "client" })) do
      assert.same({ client.pid, "shop.example" }, { ex.tid, ex.host })
    end
  end)

  it("escapes in text what a client sent to rewrite the terminal: controls, a bare CR, bytes not UTF-8", function()
    scene.nginx = te.nginx(scene.dir, scene.port)
    files.write(scene.dir .. "/client.py", table.concat({
      "import socket, sys",
      "for target in (b'/\\x1b]0;X\\x07', b'/a\\rfake', b'/\\xff\\xfe'):",
      "    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))",
      "    s.sendall(b'GET ' + target + b' HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')",
      "    while s.recv(65536):",
      "        pass",
      "    s.close()",
    }, "\n"))
    local client = te.blocked(scene.dir, "client", "/usr/bin/python3 " .. scene.dir .. "/client.py " .. scene.port)
    local trace = te.trace_words(scene.dir, "text", { "-p", scene.nginx .. "," .. client.pid })
    client.release()
    client.wait()
    e2e.kill(scene.nginx)
    local out = trace.output()
    assert.is_nil(out:find("[%z\1-\9\11-\31\127-\255]"), out)
    for _, shown in ipairs({ "/\\x1b]0;X\\x07\n", "/a\\x0dfake\n", "/\\xff\\xfe\n" }) do
      local _, n = out:gsub(shown:gsub("[%]%[%.%\\]", "%%%0"), "")
      assert.equal(2, n, shown .. " in:\n" .. out)
    end
  end)
end)
