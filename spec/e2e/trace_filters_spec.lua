-- End-to-end specs for the filters of `moonrover trace` (--port, --status,
-- --min-duration, --path, --comm, and combinations: all must match), against
-- nginx (200, 404 and 503 answers) and the Python server (/slow takes 1 s,
-- far above the 500 ms filter, whatever the load), with one curl: every trace of a case runs at once on the same
-- requests, each with its filters, and must print exactly the exchanges its
-- filters let through, on both sides (server and curl), and a summary with
-- their latency percentiles.
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local NGINX_SERVER = table.concat({
  '    location = /api/ok { return 200 "ok\\n"; }',
  "    location = /api/fail { return 503; }",
}, "\n")

-- "role target" of each exchange of list, sorted.
local function seen(list)
  local out = {}
  for _, ex in ipairs(list) do
    out[#out + 1] = ex.role .. " " .. tostring(ex.target) .. " " .. ex.status
  end
  table.sort(out)
  return out
end

-- What a trace letting through the requests of reqs for which keep(r) is
-- true prints: each one on both sides.
local function expected(reqs, keep)
  local out = {}
  for _, r in ipairs(reqs) do
    if keep(r) then
      out[#out + 1] = "client " .. r.path .. " " .. r.status
      out[#out + 1] = "server " .. r.path .. " " .. r.status
    end
  end
  table.sort(out)
  return out
end

describe("moonrover trace filters (end to end)", function()
  local dir, nginx, nginx_port, python, python_port, reqs

  before_each(function()
    dir = e2e.tmpdir()
    nginx_port = te.free_port()
    nginx = te.nginx(dir, nginx_port, { server = NGINX_SERVER })
    python, python_port = te.python_server(dir)
    reqs = {
      { port = python_port, path = "/slow", status = 200, slow = true },
      { port = python_port, path = "/nope", status = 404 },
      { port = nginx_port, path = "/api/ok", status = 200 },
      { port = nginx_port, path = "/api/fail", status = 503 },
      { port = nginx_port, path = "/static/x", status = 404 },
      { port = nginx_port, path = "/api/missing", status = 404 },
    }
  end)

  after_each(function()
    te.stop_all()
    e2e.kill(nginx)
    e2e.kill(python)
    e2e.rmdir(dir)
  end)

  local function curl_cmd()
    local words = { "/usr/bin/curl -s" }
    for _, r in ipairs(reqs) do
      words[#words + 1] = "-o /dev/null http://127.0.0.1:" .. r.port .. r.path
    end
    return table.concat(words, " ")
  end

  -- Runs curl once while each case's trace (of both servers and curl) runs;
  -- returns each case's exchanges and summary.
  local function traced(cases)
    local client = te.blocked(dir, "client", curl_cmd())
    local traces = {}
    for i, case in ipairs(cases) do
      traces[i] = te.trace(dir, "trace" .. i, { nginx, python, client.pid }, case.args)
    end
    client.release()
    client.wait()
    e2e.kill(nginx)
    e2e.kill(python)
    local results = {}
    for i, t in ipairs(traces) do
      local list, summary = t.result()
      results[i] = { list = list, summary = summary }
    end
    return results
  end

  it("prints what each filter and each combination lets through, nothing else", function()
    local cases = {
      { args = {}, keep = function() return true end },
      { args = { "--port", tostring(nginx_port) }, keep = function(r) return r.port == nginx_port end },
      { args = { "--status", "5xx" }, keep = function(r) return r.status >= 500 end },
      { args = { "--status", ">=400" }, keep = function(r) return r.status >= 400 end },
      { args = { "--status", "2xx,5xx" }, keep = function(r) return r.status ~= 404 end },
      { args = { "--status", "404" }, keep = function(r) return r.status == 404 end },
      { args = { "--min-duration", "500ms" }, keep = function(r) return r.slow end },
      { args = { "--path", "/api/" }, keep = function(r) return r.path:find("^/api/") end },
      { args = { "--path", "/api/", "--status", "404" },
        keep = function(r) return r.path == "/api/missing" end },
      { args = { "--port", tostring(nginx_port), "--status", ">=400", "--path", "/static" },
        keep = function(r) return r.path == "/static/x" end },
      { args = { "--min-duration", "500ms", "--status", "404" }, keep = function() return false end },
    }
    local results = traced(cases)
    for i, case in ipairs(cases) do
      local got = results[i]
      assert.same(expected(reqs, case.keep), seen(got.list), table.concat(case.args, " ") .. "\n" .. got.summary)
      assert.matches("lost: nothing", got.summary)
    end
    assert.matches("\n  no exchange seen\n", results[#cases].summary)
  end)

  it("sums up what it printed: count, measured and p50/p90/p99 per protocol and status class", function()
    local results = traced({ { args = {} }, { args = { "--min-duration", "500ms" } } })
    local all, slow = results[1].summary, results[2].summary
    assert.matches("http: 12 exchange%(s%): 200 x4, 404 x6, 503 x2\n", all)
    assert.matches("\n  latency +count +measured +p50_ms +p90_ms +p99_ms\n", all)
    for class, n in pairs({ ["2xx"] = 4, ["4xx"] = 6, ["5xx"] = 2 }) do
      assert.matches("\n  http " .. class .. " +" .. n .. " +" .. n .. " +[%d.]+ +[%d.]+ +[%d.]+\n", all)
    end
    local p50, p90, p99 = slow:match("\n  http 2xx +2 +2 +([%d.]+) +([%d.]+) +([%d.]+)\n")
    assert.is_truthy(p50, slow)
    for _, p in ipairs({ p50, p90, p99 }) do
      assert.is_true(tonumber(p) >= 500, slow)
    end
  end)

  it("traces the processes named by --comm, its other filters applied", function()
    local client = te.blocked(dir, "client", curl_cmd())
    local trace = te.trace_words(dir, "comm", { "-f", "json", "--comm", "nginx", "--port", tostring(nginx_port) })
    client.release()
    client.wait()
    local list, summary = trace.interrupt()
    local want = {}
    for _, r in ipairs(reqs) do
      if r.port == nginx_port then
        want[#want + 1] = "server " .. r.path .. " " .. r.status
      end
    end
    table.sort(want)
    assert.same(want, seen(list), summary)
    for _, ex in ipairs(list) do
      assert.same({ "nginx", nginx }, { ex.comm, ex.pid })
    end
    assert.matches("tracing processes named nginx %(pid [%d,]+%) and their children", summary)
  end)

  it("traces --comm's processes whatever their accepting thread is named", function()
    local sub = dir .. "/named"
    assert.equal(0, os.execute("mkdir " .. e2e.quote(sub)))
    local server, server_port = te.python_server(sub, "acceptor")
    local trace = te.trace_words(dir, "named", { "-f", "json", "--comm", "python3", "--port", tostring(server_port) })
    assert.equal(0, os.execute("/usr/bin/curl -s -o /dev/null http://127.0.0.1:" .. server_port .. "/nope"))
    local list, summary = trace.interrupt()
    e2e.kill(server)
    assert.same({ "server /nope 404" }, seen(list), summary)
    assert.same({ "acceptor", server }, { list[1].comm, list[1].pid })
  end)

  it("refuses bad filters with one line and exit code 2", function()
    for _, words in ipairs({ { "--status", "6xx" }, { "--port", "0" }, { "--min-duration", "fast" },
      { "-p", "1", "--comm", "init" }, { "-f", "xml" } }) do
      table.insert(words, 1, "trace")
      local code, _, err = e2e.moonrover(words)
      assert.equal(2, code, err)
      assert.matches("^moonrover trace: [^\n]+\n$", err)
    end
    local code, _, err = e2e.moonrover({ "trace", "--comm", "no_such_prog", "-d", "1" })
    assert.same({ 1, "moonrover trace: no process named no_such_prog\n" }, { code, err })
  end)
end)
