-- End-to-end specs for `moonrover trace` under deep pipelining: a Python
-- client writes 100 GETs in one write to nginx (which reads them in pieces
-- of its header buffer, a request split across two reads) and reads all the
-- responses with one large recv, once they are all buffered (the requests,
-- 3.3 KB, fit in the smallest copy of a write). Both ends are
-- traced: every exchange is seen once in nginx and once in the client, all
-- paired. With a copy too small for the one read of every response, the
-- client's requests whose answers were in bytes not copied say "lost sync",
-- never "no response".
local C = require("moonrover.consts")
local e2e = require("support.e2e")
local files = require("support.files")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local REQUESTS = 100
local WHOLE_COPY = 32768 -- copies the ~16-24 KB of the one read of every response

local CLIENT = [[
import array, fcntl, socket, sys, termios, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
n = int(sys.argv[2])
s.sendall(b''.join(b'GET /?n=%d HTTP/1.1\r\nHost: x\r\n\r\n' % k for k in range(n)))
# Waits until every response is buffered (the count stops growing), then reads them with one recv.
queued, last = array.array('i', [0]), -1
deadline = time.time() + 30
while time.time() < deadline:
    fcntl.ioctl(s.fileno(), termios.FIONREAD, queued)
    if queued[0] == last and last > 0:
        break
    last = queued[0]
    time.sleep(0.2)
got = s.recv(65536)
s.close()
print(len(got), got.count(b'HTTP/1.1 200 '))
]]

describe("moonrover trace of 100 pipelined requests (end to end)", function()
  local scene = te.each_test(before_each, after_each, { page = "hello from nginx\n" })

  -- The exchanges of nginx and of the client, the summary and what the
  -- client read (bytes, responses), traced with the argument words extra.
  local function pipelined(extra)
    local script = scene.dir .. "/pipeline.py"
    files.write(script, CLIENT)
    local client = te.blocked(scene.dir, "client", "/usr/bin/python3 " .. script .. " " .. scene.port .. " " ..
      REQUESTS)
    local trace = te.trace(scene.dir, "trace", { scene.nginx, client.pid }, extra)
    client.release()
    local out = client.wait()
    e2e.kill(scene.nginx)
    local list, summary = trace.result()
    local bytes, responses = out:match("(%d+) (%d+)")
    assert.equal(REQUESTS, tonumber(responses), out)
    return te.select(list, { pid = scene.nginx, role = "server" }), te.select(list, { pid = client.pid,
      role = "client" }), summary, tonumber(bytes)
  end

  -- Every exchange of list a 200 without error, in the order sent.
  local function check_all_paired(list)
    assert.equal(REQUESTS, #list)
    for k, ex in ipairs(list) do
      assert.same({ "/?n=" .. (k - 1), 200 }, { ex.target, ex.status })
      assert.is_nil(ex.error)
    end
  end

  it("pairs all 100 on nginx's side, and never says no response on the client's", function()
    local servers, clients, summary = pipelined({ "--payload", "4096" })
    check_all_paired(servers)
    assert.equal(REQUESTS, #clients)
    local paired = 0
    for k, ex in ipairs(clients) do
      assert.equal("/?n=" .. (k - 1), ex.target)
      if ex.error then
        assert.equal("lost sync", ex.error)
      else
        assert.equal(200, ex.status)
        paired = paired + 1
      end
    end
    assert.is_true(paired > 0 and paired < REQUESTS, paired)
    assert.matches("lost sync x" .. (REQUESTS - paired), summary)
    assert.is_nil(summary:find("no response", 1, true))
  end)

  local whole = C.MR_NET_PAYLOAD_MAX >= WHOLE_COPY and it or function(name)
    it(name, function()
      pending("the kernel copies at most " .. C.MR_NET_PAYLOAD_MAX .. " bytes of a read (MR_NET_PAYLOAD_MAX), " ..
        "less than the " .. WHOLE_COPY .. " that the one read of every response needs")
    end)
  end

  whole("pairs all 100 on both sides when the one read of every response is copied whole", function()
    local servers, clients, summary, bytes = pipelined({ "--payload", tostring(WHOLE_COPY) })
    assert.is_true(bytes < WHOLE_COPY, bytes)
    check_all_paired(servers)
    check_all_paired(clients)
    assert.matches("lost: nothing", summary)
  end)
end)
