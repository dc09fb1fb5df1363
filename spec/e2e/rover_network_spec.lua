-- End-to-end spec of a Rover NETWORK task against the stand-in OAP: nginx
-- proxying /slow and /fail to a Python backend (slow, and failing), both
-- named by the drop-in's rules, curl sending a known number of requests
-- (some with an sw8 or b3 header), and what the task reports: rover_net_p_*
-- meters whose request counts are the requests sent, and the sampled traces
-- of the slow, the 404 and the 500 requests that carried a trace header.
local clock = require("support.clock")
local e2e = require("support.e2e")
local oap = require("support.oap")
local rover_run = require("support.rover_run")
local trace_e2e = require("support.trace_e2e")
local write = require("support.files").write
local cjson = require("cjson")

local q = e2e.quote
local PYTHON = "/usr/bin/python3"

local it = require("support.skip").guard(it, pending, trace_e2e.skip_reason({ PYTHON, "/usr/sbin/nginx",
  "/usr/bin/curl" }))

local BACKEND_SCRIPT = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/http_server.py"

-- The drop-in's schedule with CONFIG's periods (rover_spec.lua explains
-- it): processes reported after the first scan and a heartbeat; a task
-- starts at the tick after the queryTasks that brings it; a report goes out
-- every report_interval. rover_run.SLACK_S is added to every deadline.
local HEARTBEAT_S, CHECK_S, REPORT_S, TICK_S = 1, 1, 1, 1
local REPORTED_S = 0.5 + HEARTBEAT_S
local STARTED_S = CHECK_S + TICK_S
-- How long the backend takes to answer /slow (above the rule's MinDuration).
local SLOW_S, MIN_DURATION_MS = 1.5, 1000

local CONFIG = [[
core:
  backend:
    addr: 127.0.0.1:<port>
process_discovery:
  heartbeat_period: <heartbeat>s
  kubernetes:
    active: false
  scanner:
    regex:
      - match_cmd: "^/usr/sbin/nginx -c <dir>/nginx[.]conf"
        layer: OS_LINUX
        service_name: spec-web
        instance_name: spec-instance
        process_name: nginx
        labels: ""
      - match_cmd: "http_server[.]py <backend> "
        layer: OS_LINUX
        service_name: spec-web
        instance_name: spec-instance
        process_name: backend
        labels: ""
profiling:
  check_interval: <check>s
  task:
    network:
      report_interval: <report>s
]]

-- sw8 of trace "spec-trace-1", segment "spec-segment-1", span 2 (base64
-- of the ids, as SkyWalking's agents write them).
local function sw8()
  local function b64(s)
    local _, out = e2e.run("printf %s " .. q(s) .. " | base64 -w0")
    return out
  end
  return table.concat({ "1", b64("spec-trace-1"), b64("spec-segment-1"), "2", b64("spec-web"), b64("client"),
    b64("/slow"), b64("127.0.0.1:80") }, "-")
end

local B3_TRACE, B3_SPAN = "80f198ee56343ba864fe8b2a57d3eff7", "e457b5a2e4d86bd1"

local function reported_pids(stub)
  local pids = {}
  for _, r in ipairs(stub:records("reportProcesses")) do
    for _, p in ipairs(r.message.processes or {}) do
      if p.hostProcess then
        pids[tonumber(p.hostProcess.pid)] = true
      end
    end
  end
  return pids
end

describe("Rover drop-in NETWORK task (end to end, stand-in OAP)", function()
  local dir, stub, agent, nginx, backend

  after_each(function()
    rover_run.stop(agent, stub)
    agent, stub = nil, nil
    e2e.kill(nginx)
    e2e.kill(backend)
    nginx, backend = nil, nil
    e2e.rmdir(dir)
  end)

  local function await(what, due, fn)
    return rover_run.await(stub, agent, what, due, fn)
  end

  local function start_servers()
    local backend_port = trace_e2e.free_port()
    local p = io.popen(string.format("%s %s %d /slow=200:%s /fail=500 >%s 2>&1 & echo $!", PYTHON,
      q(BACKEND_SCRIPT), backend_port, SLOW_S, q(dir .. "/backend.out")))
    backend = tonumber(p:read("*l"))
    p:close()
    trace_e2e.wait_for("the backend on port " .. backend_port, function()
      return os.execute("curl -s -o /dev/null http://127.0.0.1:" .. backend_port .. "/none") == 0
    end)
    local port = trace_e2e.free_port()
    local upstream = " { proxy_pass http://127.0.0.1:" .. backend_port .. "; }"
    nginx = trace_e2e.nginx(dir, port, { server = "    location /slow" .. upstream .. "\n    location /fail"
      .. upstream })
    write(dir .. "/www/index.html", "hello\n")
    return port, backend_port
  end

  it("meters every request sent and samples the slow, 404 and 500 requests that carried a trace", function()
    dir = e2e.tmpdir()
    stub = assert(oap.start({ dir = dir }))
    local port, backend_port = start_servers()
    agent = rover_run.start_agent(dir, CONFIG, { port = stub.port, heartbeat = HEARTBEAT_S, check = CHECK_S,
      report = REPORT_S, dir = rover_run.literal(dir), backend = backend_port }, "--network on --script-memory 1024")
    await("nginx (pid " .. nginx .. ") and the backend (pid " .. backend .. ") reported", REPORTED_S, function()
      local pids = reported_pids(stub)
      return pids[nginx] and pids[backend]
    end)

    local now = clock.now_ms()
    stub:write_tasks({ { taskId = "spec-network", updateTime = now, startTime = now, duration = 120,
      serviceName = "spec-web", instanceName = "spec-instance", targetType = "NETWORK",
      extensionConfig = { NetworkSamplings = { { MinDuration = MIN_DURATION_MS, When4xx = true, When5xx = true,
        Settings = { RequireCompleteRequest = true, RequireCompleteResponse = true } } } } } })
    await("the NETWORK task running", STARTED_S, function()
      return agent:metric("moonrover_rover_tasks_running") == 1
    end)

    -- 12 pages (4 with sw8), 3 missing pages (1 with sw8), 1 slow page with
    -- sw8, 1 failing page with b3: 17 requests to nginx, two of them
    -- proxied to the backend.
    local function curl(path, header)
      return "curl -s -o /dev/null " .. (header and "-H " .. q(header) .. " " or "") .. "http://127.0.0.1:" .. port
        .. path
    end
    local traced = "sw8: " .. sw8()
    local script = {}
    for i = 1, 12 do
      script[#script + 1] = curl("/index.html", i <= 4 and traced)
    end
    for i = 1, 3 do
      script[#script + 1] = curl("/missing", i == 1 and traced)
    end
    script[#script + 1] = curl("/slow", traced)
    script[#script + 1] = curl("/fail", "b3: " .. B3_TRACE .. "-" .. B3_SPAN .. "-1")
    local code, _, err = e2e.run(table.concat(script, " && "))
    assert.equal(0, code, err)
    local sent = 17

    local nginx_id = oap.process_id("spec-web", "spec-instance", "nginx")
    local backend_id = oap.process_id("spec-web", "spec-instance", "backend")
    local served = { server_process_id = nginx_id, side = "server" }
    await(sent .. " requests metered on nginx's server side", REPORT_S, function()
      return stub:meter_sum("rover_net_p_http1_request_counter", served) >= sent
    end)
    -- Two more reports: nothing counted twice, nothing late.
    os.execute("sleep " .. 2 * REPORT_S)
    assert.equal(sent, stub:meter_sum("rover_net_p_http1_request_counter", served))
    served.code = "200"
    assert.equal(13, stub:meter_sum("rover_net_p_http1_response_status_counter", served))
    served.code = "404"
    assert.equal(3, stub:meter_sum("rover_net_p_http1_response_status_counter", served))
    served.code = "500"
    assert.equal(1, stub:meter_sum("rover_net_p_http1_response_status_counter", served))
    assert.equal(2, stub:meter_sum("rover_net_p_http1_request_counter", { server_process_id = backend_id,
      client_process_id = nginx_id, side = "server" }))
    assert.equal(2, stub:meter_sum("rover_net_p_http1_request_counter", { client_process_id = nginx_id,
      server_process_id = backend_id, side = "client" }))
    assert.is_true(stub:meter_sum("rover_net_p_server_read_bytes_counter", { server_process_id = nginx_id }) > 0)
    -- The agent's own count: nginx's 17 as a server, 2 as the backend's client, the backend's 2.
    local ids = { nginx_id, backend_id }
    table.sort(ids)
    local series = 'moonrover_rover_task_exchanges{process="%s",task="spec-network"}'
    assert.equal(sent + 4, agent:metric(series:format(table.concat(ids, ","))))
    local first = stub:meters("rover_net_p_http1_request_counter")[1]
    assert.same({ "spec-web", "spec-instance" }, { first.service, first.instance })

    local logs = stub:logs()
    local by_reason = {}
    for _, log in ipairs(logs) do
      local body = cjson.decode(log.body.json.json)
      if body.server_process.process_id == nginx_id and body.detect_point == "server" then
        by_reason[body.reason] = { body = body, log = log }
      end
    end
    local slow = by_reason.slow
    assert.is_truthy(slow, "no slow trace sampled on nginx among " .. #logs .. " logs")
    assert.same({ "/slow", "skywalking", "http", 200, "spec-trace-1" }, { slow.body.uri, slow.body.trace_provider,
      slow.body.component, slow.body.status, slow.log.traceContext.traceId })
    assert.is_true(slow.body.latency >= MIN_DURATION_MS)
    assert.same({ { key = "LOG_KIND", value = "NET_PROFILING_SAMPLED_TRACE" } }, slow.log.tags.data)
    assert.same({ "spec-web", "spec-instance", "OS_LINUX" }, { slow.log.service, slow.log.serviceInstance,
      slow.log.layer })
    assert.same({ "/missing", 404 }, { by_reason.status_4xx.body.uri, by_reason.status_4xx.body.status })
    local failed = by_reason.status_5xx
    assert.same({ "/fail", 500, "zipkin", B3_TRACE }, { failed.body.uri, failed.body.status,
      failed.body.trace_provider, failed.log.traceContext.traceId })

    local spans = {}
    for _, e in ipairs(stub:span_events()) do
      local tags = {}
      for _, t in ipairs(e.tags) do
        tags[t.key] = t.value
      end
      if tags.process_name == "nginx" and tags.connection_role == "server" then
        spans[e.event .. " " .. tags.data_content:match("^[^\r]*")] = e
      end
    end
    local request = spans["HTTP Request Sampling GET /slow HTTP/1.1"]
    assert.is_truthy(request, "no request sample of /slow on nginx")
    assert.same({ "spec-trace-1", "spec-segment-1", "2" }, { request.traceContext.traceId,
      request.traceContext.traceSegmentId, request.traceContext.spanId })
    assert.is_truthy(spans["HTTP Response Sampling HTTP/1.1 200"])
    local zipkin = spans["HTTP Request Sampling GET /fail HTTP/1.1"]
    assert.same({ B3_TRACE, "", B3_SPAN, "ZIPKIN" }, { zipkin.traceContext.traceId,
      zipkin.traceContext.traceSegmentId or "", zipkin.traceContext.spanId, zipkin.traceContext.type })
  end)
end)
