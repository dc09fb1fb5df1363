-- End-to-end specs for `moonrover trace` under wrk against nginx, both
-- traced. wrk -t1 -c4 keeps one request in flight per connection and counts
-- a response ("N requests in ...") as soon as it has parsed it, right after
-- the read that completed it; at its end it exits with up to 4 requests
-- written and not answered (or answered and not read). So, with nothing
-- lost: in wrk, exactly N exchanges are complete 200s and at most 4 are
-- "no response" (or cut); in nginx, between N and N + 4 exchanges are 200s,
-- and at most 4 - (its 200s - N) others are incomplete. nginx delays
-- requests to 2000 a second (limit_req with a burst, never refusing) so
-- that the trace keeps up and loses nothing. Then a load it cannot keep up
-- with: the trace still ends at its duration, counting what it dropped.
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local IN_FLIGHT = 4 -- wrk's connections: one request each at a time

local function count(list, key)
  return te.by_status(list)[key] or 0
end

describe("moonrover trace under wrk (end to end)", function()
  local scene = te.each_test(before_each, after_each)

  it("sees each of wrk's requests once in wrk and once in nginx", function()
    scene:serve("hello from nginx\n", { http = "  limit_req_zone $binary_remote_addr zone=spec:1m rate=2000r/s;",
      server = "    limit_req zone=spec burst=1000;" })
    local list, summary, wrk_pid, out = scene:traced("wrk", "/usr/bin/wrk -t1 -c4 -d2 http://127.0.0.1:" ..
      scene.port .. "/index.html")
    local n = tonumber(out:match("(%d+) requests in"))
    assert.is_true(n > 0, out)
    assert.matches("lost: nothing", summary)
    local client = te.select(list, { pid = wrk_pid, role = "client", comm = "wrk" })
    local server = te.select(list, { pid = scene.nginx, role = "server", comm = "nginx" })
    assert.equal(#list, #client + #server)
    assert.equal(n, count(client, "200"))
    assert.is_true(#client - n <= IN_FLIGHT, #client - n)
    local answered = count(server, "200")
    assert.is_true(answered >= n and answered <= n + IN_FLIGHT, answered - n)
    assert.is_true(#server <= n + IN_FLIGHT, #server - n)
    for _, ex in ipairs(list) do
      assert.is_true(ex.status == 200 or ex.error ~= nil)
      assert.same({ "GET", "/index.html" }, { ex.method, ex.target })
    end
  end)

  it("ends at its duration under a load it cannot keep up with, counting what it dropped", function()
    scene:serve("hello from nginx\n")
    local wrk = te.blocked(scene.dir, "wrk", "/usr/bin/wrk -t1 -c4 -d60 http://127.0.0.1:" .. scene.port ..
      "/index.html")
    wrk.release()
    local code, _, err = e2e.run("timeout 30 " .. e2e.quote(e2e.bin) .. " trace --format json -o " ..
      e2e.quote(scene.dir .. "/t.json") .. " -p " .. scene.nginx .. "," .. wrk.pid .. " -d 1")
    e2e.kill(wrk.pid)
    wrk.wait()
    assert.equal(0, code, err)
    assert.matches("moonrover trace: %d+%.%d s\n", err)
    assert.matches("lost: ", err)
  end)
end)
