-- End-to-end spec of clients that close (or reset) their connection before
-- the server answers: the server's late send meets a socket the kernel has
-- already closed (spec/support/late_answer_server.py answers 50 ms after
-- each request, spec/support/early_close_clients.py leaves first). Traced
-- by `moonrover trace --format json` (both ends), and, in this process, by
-- a data plane of its own that must have let go of every one of the
-- test's connections afterwards: a closed socket is never tracked again.
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason({ "/usr/bin/python3" }))

local PYTHON = "/usr/bin/python3"
local CLIENTS, WAVE = 500, 50
local ANSWER_S = 0.05

local function support(name)
  return (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/" .. name
end

local function background(cmd)
  local p = io.popen(cmd .. " & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

describe("clients that leave before the answer (end to end)", function()
  local dir, server, port, src

  before_each(function()
    dir = e2e.tmpdir()
    port = te.free_port()
    server = background(PYTHON .. " " .. e2e.quote(support("late_answer_server.py")) .. " " .. port .. " " ..
      ANSWER_S .. " >/dev/null 2>" .. e2e.quote(dir .. "/server.err"))
    te.wait_for("the server on port " .. port, function()
      return os.execute("curl -s -o /dev/null http://127.0.0.1:" .. port .. "/") == 0 or not te.alive(server)
    end)
    assert(te.alive(server), "the server did not start")
  end)

  after_each(function()
    if src then
      src:close()
      src = nil
    end
    te.stop_all()
    e2e.kill(server)
    e2e.rmdir(dir)
  end)

  it("keeps each server exchange's addresses and leaves no connection in the kernel's map", function()
    local client = te.blocked(dir, "clients", PYTHON .. " " .. e2e.quote(support("early_close_clients.py")) .. " " ..
      port .. " " .. CLIENTS .. " " .. WAVE .. " /slow")
    src = assert(require("moonrover.net.source").open({ pids = { server, client.pid } }))
    assert(src:start())
    local trace = te.trace(dir, "trace", { server, client.pid })
    client.release()
    client.wait()
    -- The server answers ANSWER_S after each request.
    os.execute("sleep " .. ANSWER_S * 2)
    local conns, n = {}, 0
    src:drain({
      on_tcp_event = function(_, e)
        local key = tostring(e.conn) -- cdata keys would be told apart by identity
        if (e.pid == server or e.pid == client.pid) and not conns[key] then
          conns[key], n = e.conn, n + 1
        end
      end,
      on_data_run = function() end,
    })
    assert.is_true(n >= CLIENTS, n .. " connection(s) seen")
    -- The map also holds every other connection accepted on this machine
    -- (other tests' servers): this test's own must all have left it.
    local open = {}
    pcall(te.wait_for, "this test's connections to leave the kernel's map", function()
      open = {}
      for key, conn in pairs(conns) do
        if src:conn_open(conn) then
          open[#open + 1] = key
        end
      end
      return #open == 0
    end)
    assert.same({}, open)
    local stats = src:stats()
    e2e.kill(server)
    local list = trace.result()
    local servers = te.select(list, { pid = server, role = "server" })
    assert.is_true(#servers >= CLIENTS / 2, #servers .. " server exchange(s)")
    for _, ex in ipairs(servers) do
      assert.equal("127.0.0.1:" .. port, ex["local"])
    end
    assert.equal(0, stats.kernel.found_midstream)
  end)
end)
