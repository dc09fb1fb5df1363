-- End-to-end specs for the processes `moonrover trace` follows: `-p` of an
-- nginx master sees the requests its workers serve (forked before the
-- trace, found in /proc; and forked after it by a reload, which the kernel
-- traces from their fork: a child's first connection is seen), `--comm
-- nginx` sees them too, and a whole-machine trace shows nothing of a
-- moonrover agent whose /metrics is scraped meanwhile.
local agent_run = require("support.agent_run")
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local WORKERS = 2

-- The pids of pid's children, sorted.
local function children(pid)
  local p = io.popen("pgrep -P " .. pid)
  local list = {}
  for line in p:lines() do
    list[#list + 1] = tonumber(line)
  end
  p:close()
  table.sort(list)
  return list
end

local function set_of(list)
  local set = {}
  for _, v in ipairs(list) do
    set[v] = true
  end
  return set
end

describe("moonrover trace following processes (end to end)", function()
  local scene = te.each_test(before_each, after_each, { page = "hello from a worker\n",
    nginx = { workers = WORKERS } })

  before_each(function()
    te.wait_for("nginx's workers", function()
      return #children(scene.nginx) == WORKERS
    end)
  end)

  -- curl of n fresh connections (each served by whichever worker accepts it).
  local function curl(n)
    local words = { "/usr/bin/curl -s" }
    for i = 1, n do
      words[#words + 1] = "-o /dev/null -H 'Connection: close' http://127.0.0.1:" .. scene.port .. "/index.html?n=" .. i
    end
    assert.equal(0, os.execute(table.concat(words, " ")))
  end

  -- Every exchange of list served by one of workers (a set of pids).
  local function check_served(list, workers, n)
    assert.equal(n, #list)
    for _, ex in ipairs(list) do
      assert.same({ "server", "nginx", 200, true }, { ex.role, ex.comm, ex.status, workers[ex.pid] == true })
    end
  end

  it("with -p of nginx's master, sees the requests its workers (forked before the trace) serve", function()
    local workers = set_of(children(scene.nginx))
    local trace = te.trace(scene.dir, "trace", { scene.nginx })
    curl(6)
    e2e.kill(scene.nginx)
    local list, summary = trace.result()
    check_served(list, workers, 6)
    assert.matches("tracing pid " .. scene.nginx .. " and children", summary)
    assert.matches("lost: nothing", summary)
  end)

  it("follows the workers a reload forks after the trace started", function()
    local old = children(scene.nginx)
    local trace = te.trace(scene.dir, "trace", { scene.nginx })
    os.execute("kill -HUP " .. scene.nginx)
    local new
    te.wait_for("the reload's new workers", function()
      new = children(scene.nginx)
      return #new == WORKERS and not set_of(old)[new[1]] and not set_of(old)[new[2]]
    end)
    curl(6)
    e2e.kill(scene.nginx)
    local list, summary = trace.result()
    check_served(list, set_of(new), 6)
    assert.matches("\n  %d+ process%(es%) followed\n", summary)
    assert.matches("lost: nothing", summary)
  end)

  it("traces a child forked after the trace started from its first connection", function()
    -- The subshell connects, asks and reads with builtins, microseconds
    -- after its fork: long before its fork event could reach user space.
    local ask = "exec 3<>/dev/tcp/127.0.0.1/" .. scene.port .. "; printf 'GET /index.html HTTP/1.1\\r\\n" ..
      "Host: x\\r\\nConnection: close\\r\\n\\r\\n' >&3; while read -r line <&3; do :; done"
    local parent = te.blocked(scene.dir, "parent", "/bin/bash -c " .. e2e.quote("(" .. ask .. "); wait"))
    local trace = te.trace(scene.dir, "trace", { parent.pid })
    parent.release()
    parent.wait()
    local list, summary = trace.result()
    local asked = te.select(list, { role = "client" })
    assert.equal(1, #asked, summary)
    assert.same({ "GET", "/index.html", 200, true }, { asked[1].method, asked[1].target, asked[1].status,
      asked[1].pid ~= parent.pid })
  end)

  it("with --comm nginx, sees the workers' requests", function()
    local workers = set_of(children(scene.nginx))
    local trace = te.trace_words(scene.dir, "comm", { "-f", "json", "--comm", "nginx", "--port", tostring(scene.port) })
    curl(4)
    local list, summary = trace.interrupt()
    check_served(list, workers, 4)
    assert.matches("tracing processes named nginx %(pid [%d,]+%) and their children", summary)
  end)

  it("shows nothing of a moonrover agent's traffic while its /metrics is scraped", function()
    local agent = agent_run.start(scene.dir, agent_run.scripts_dir(scene.dir))
    local trace = te.trace_words(scene.dir, "all", { "-f", "json", "--port", tostring(agent.port) })
    for _ = 1, 3 do
      assert.is_truthy(agent:get("/metrics"))
    end
    local list, summary = trace.interrupt()
    agent:stop()
    assert.equal(3, #list, summary)
    for _, ex in ipairs(list) do
      assert.same({ "curl", "client", "/metrics", 200 }, { ex.comm, ex.role, ex.target, ex.status })
    end
    assert.matches("http: 3 exchange%(s%): 200 x3\n", summary)
    assert.matches("\n  [1-9]%d* connection%(s%) of moonrover itself not shown\n", summary)
  end)
end)
