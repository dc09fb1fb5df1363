-- Specs for the stand-in OAP's continuous-profiling and network-profiling
-- services (spec/support/oap): each call is made by the agent's own client
-- (lua/moonrover/rover/oap_client.lua: the runtime's gRPC transport and the
-- SkyWalking descriptors it carries), so they show that the messages the
-- agent builds round-trip to what OAP would receive, and that the stub's
-- answers decode.
local cjson = require("cjson")
local clock = require("support.clock")
local e2e = require("support.e2e")
local oap = require("support.oap")
local oap_client = require("moonrover.rover.oap_client")

local T0 = 1700000000000
local CPU_POLICY = { ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 5, Count = 3 } } }
local HTTP_POLICY = { NETWORK = { HTTP_ERROR_RATE = { Threshold = "10", Period = 10, Count = 2,
  URIList = { "/api/pay" } } } }

-- Makes one call through the client; waits (bounded) for its callback;
-- returns what the callback got: the response, or nil, why, code.
local function call(client, method, ...)
  local got
  local args = { ... }
  args[#args + 1] = function(response, why, code)
    got = { response, why, code }
  end
  client[method](client, unpack(args))
  assert(clock.wait_for(function()
    client:poll()
    return got
  end, 15), method .. ": no answer")
  return got[1], got[2], got[3]
end

local function query_policies(client, queries)
  local response, why = call(client, "query_policies", { policies = queries })
  assert(response, why)
  return response.commands or {}
end

-- The services of a ContinuousProfilingPolicyQuery command, by name.
local function services_of(command)
  assert.equals("ContinuousProfilingPolicyQuery", command.command)
  local by_name = {}
  for _, s in ipairs(cjson.decode(oap.command_args(command).ServiceWithPolicyJSON)) do
    by_name[s.ServiceName] = s
  end
  return by_name
end

describe("stand-in OAP, continuous and network profiling services", function()
  local stub, client

  before_each(function()
    stub = assert(oap.start())
    client = assert(oap_client.open({ core = { backend = { addr = stub:address() } } }))
  end)

  after_each(function()
    -- Closes the client's transport before the stub goes away.
    client = nil
    collectgarbage()
    stub:stop()
    e2e.rmdir(stub.dir)
  end)

  it("answers queryPolicies with the written policies, changed UUIDs only", function()
    stub:write_policies("cart", CPU_POLICY)
    stub:write_policies("pay", HTTP_POLICY)
    local commands = query_policies(client, { { serviceName = "cart", uuid = "" }, { serviceName = "pay" },
      { serviceName = "none" } })
    assert.equals(1, #commands)
    assert.matches("^%x+%-", oap.command_args(commands[1]).SerialNumber)
    local services = services_of(commands[1])
    assert.same({ "cart", "pay" }, { services.cart.ServiceName, services.pay.ServiceName })
    assert.is_nil(services.none)
    assert.same(CPU_POLICY, services.cart.Profiling)
    assert.same(HTTP_POLICY, services.pay.Profiling)
    local cart_uuid = services.cart.UUID
    assert.matches("^%x+$", cart_uuid)

    assert.same({}, query_policies(client, { { serviceName = "cart", uuid = cart_uuid } }))

    local changed = { ON_CPU = { PROCESS_CPU = { Threshold = "80", Period = 5, Count = 3 } } }
    stub:write_policies("cart", changed)
    services = services_of(query_policies(client, { { serviceName = "cart", uuid = cart_uuid } })[1])
    assert.same(changed, services.cart.Profiling)
    assert.are_not.equal(cart_uuid, services.cart.UUID)

    stub:write_policies("cart", nil)
    services = services_of(query_policies(client, { { serviceName = "cart", uuid = services.cart.UUID } })[1])
    assert.same({ ServiceName = "cart", UUID = "" }, services.cart)
    assert.same({}, query_policies(client, { { serviceName = "cart", uuid = "" } }))

    local recs = stub:wait_records("queryPolicies", 5)
    assert.same({ serviceName = "cart", uuid = "" }, recs[1].message.policies[1])
    assert.equals(1, #recs[1].answer.commands)
  end)

  it("records reportProfilingTask and answers with a new task id", function()
    local report = { layer = "GENERAL", serviceName = "cart", instanceName = "node-1", processName = "cart",
      causes = { { type = 0, singleValue = { threshold = 50, current = 87.5 } } }, duration = 600, onCPU = {} }
    local before = clock.now_ms()
    local response, why = call(client, "report_profiling_task", report)
    assert(response, why)
    assert.equals(1, #response.commands)
    assert.equals("ContinuousProfilingReportTask", response.commands[1].command)
    local task_id = oap.command_args(response.commands[1]).TaskId
    assert.matches("%x", task_id)

    local network = { layer = "GENERAL", serviceName = "pay", instanceName = "node-1", processName = "pay",
      causes = { { type = 3, uri = { path = "/api/pay", threshold = 10, current = 25 } } }, duration = 60,
      network = { samplingURIRegexes = { "/api/pay" } } }
    local second = assert(call(client, "report_profiling_task", network))
    assert.are_not.equal(task_id, oap.command_args(second.commands[1]).TaskId)

    local reports = stub:wait_profiling_reports(2)
    assert.equals(task_id, reports[1].taskId)
    assert.same({ "ON_CPU", 600 }, { reports[1].targetType, reports[1].duration })
    assert.is_true(reports[1].startTime >= before and reports[1].startTime <= clock.now_ms())
    assert.same({ "NETWORK", 60 }, { reports[2].targetType, reports[2].duration })
    assert.same({ type = "ProcessCPU", singleValue = { threshold = 50, current = 87.5 } }, reports[1].report.causes[1])
    assert.same({}, reports[1].report.onCPU)
    assert.equals(600, reports[1].report.duration)
    assert.same({ "GENERAL", "cart", "node-1", "cart" }, { reports[1].report.layer, reports[1].report.serviceName,
      reports[1].report.instanceName, reports[1].report.processName })
    assert.same({ type = "HTTPErrorRate", uri = { path = "/api/pay", threshold = 10, current = 25 } },
      reports[2].report.causes[1])
    assert.same({ "/api/pay" }, reports[2].report.network.samplingURIRegexes)
  end)

  it("gives a fired policy's task the id reportProcesses gave its process", function()
    local entity = { layer = "GENERAL", serviceName = "cart", instanceName = "node-1", processName = "cart" }
    local reported = assert(call(client, "unary", oap_client.REPORT_PROCESSES, "skywalking.v3.EBPFProcessReportList",
      { ebpfAgentID = "agent", processes = { { hostProcess = { entity = entity, pid = 4242 } } } },
      "skywalking.v3.EBPFReportProcessDownstream"))
    local report = { layer = "GENERAL", serviceName = "cart", instanceName = "node-1", processName = "cart",
      duration = 60, offCPU = {} }
    assert(call(client, "report_profiling_task", report))
    local task = stub:wait_profiling_reports(1)[1]
    assert.equals(reported.processes[1].processId, task.processId)
    assert.equals("OFF_CPU", task.targetType)
  end)

  it("fails reportProfilingTask without a target task or a cause's URI, as OAP does", function()
    local response, why, code = call(client, "report_profiling_task", { serviceName = "cart", duration = 60 })
    assert.is_nil(response)
    assert.equals("UNKNOWN", code)
    assert.matches("task type", why)
    response, why, code = call(client, "report_profiling_task", { serviceName = "cart", duration = 60,
      network = {}, causes = { { type = 3, uri = { threshold = 10, current = 20 } } } })
    assert.is_nil(response)
    assert.equals("UNKNOWN", code)
    assert.matches("uri", why)
    assert.equals(2, #stub:wait_records("reportProfilingTask", 2))
    assert.same({}, stub:profiling_reports())
  end)

  it("does not hand the tasks of fired policies out in queryTasks, as OAP does not", function()
    assert(call(client, "report_profiling_task", { serviceName = "cart", duration = 60, onCPU = {} }))
    local response = assert(call(client, "unary", oap_client.QUERY_TASKS, "skywalking.v3.EBPFProfilingTaskQuery",
      { roverInstanceId = "agent", latestUpdateTime = 0 }, "skywalking.v3.Commands"))
    assert.same({}, response.commands or {})
  end)

  it("records collectBatch meters with their labels, values and buckets", function()
    local now = clock.now_ms()
    local first = { { service = "cart", serviceInstance = "node-1", timestamp = now,
      singleValue = { name = "rover_con_p_process_cpu", value = 87.5,
        labels = { { name = "process_name", value = "cart" }, { name = "layer", value = "GENERAL" } } } },
      { histogram = { name = "rover_net_p_http1_request_duration", labels = { { name = "side", value = "server" } },
        values = { { bucket = 0, count = 3, isNegativeInfinity = true }, { bucket = 50, count = 2 } } } } }
    local second = { { service = "pay", serviceInstance = "node-2", timestamp = now + 1,
      singleValue = { name = "rover_con_p_process_cpu", value = 12, labels = {} } } }
    local response, why = call(client, "collect_meter_batch", { { meterData = first }, { meterData = second } })
    assert(response, why)

    local cpu = stub:wait_meters("rover_con_p_process_cpu", 2)
    assert.same({ process_name = "cart", layer = "GENERAL" }, cpu[1].labels)
    assert.same({ 87.5, "cart", "node-1", now }, { cpu[1].value, cpu[1].service, cpu[1].instance, cpu[1].timestamp })
    assert.same({ 12, "pay", "node-2", now + 1 }, { cpu[2].value, cpu[2].service, cpu[2].instance, cpu[2].timestamp })
    local hist = stub:meters("rover_net_p_http1_request_duration")[1]
    assert.same({ "cart", "node-1", now }, { hist.service, hist.instance, hist.timestamp })
    assert.is_nil(hist.value)
    assert.same({ { bucket = 0, count = 3, isNegativeInfinity = true }, { bucket = 50, count = 2,
      isNegativeInfinity = false } }, hist.buckets)
    local recs = stub:records("collectMeterBatch")
    assert.same({ 0, 1 }, { recs[1].seq, recs[2].seq })
    assert.equals(recs[1].call, recs[2].call)
  end)

  it("records collect meters, each taking the service, instance and time of the stream's first", function()
    local now = clock.now_ms()
    local meters = { { service = "cart", serviceInstance = "node-1", timestamp = now,
      singleValue = { name = "threads", value = 7, labels = {} } },
      { singleValue = { name = "threads", value = 8, labels = { { name = "process_name", value = "cart" } } } } }
    assert(call(client, "stream", "/skywalking.v3.MeterReportService/collect", "skywalking.v3.MeterData", meters,
      "skywalking.v3.Commands"))
    local got = stub:wait_meters("threads", 2)
    assert.same({ 7, "cart", "node-1", now }, { got[1].value, got[1].service, got[1].instance, got[1].timestamp })
    assert.same({ 8, "cart", "node-1", now }, { got[2].value, got[2].service, got[2].instance, got[2].timestamp })
    assert.same({ process_name = "cart" }, got[2].labels)
    assert.equals(2, #stub:records("collectMeter"))
  end)

  it("records collectLogs log records", function()
    local body = cjson.encode({ uri = "/api/pay", reason = "slow", latency = 1200 })
    local log = { timestamp = T0, service = "pay", serviceInstance = "node-1", layer = "GENERAL",
      body = { type = "json", json = { json = body } }, traceContext = { traceId = "trace-1" },
      tags = { data = { { key = "LOG_KIND", value = "NET_PROFILING_SAMPLED_TRACE" } } } }
    assert(call(client, "collect_logs", { log, log }))
    local logs = stub:wait_logs(2)
    assert.equals(2, #logs)
    assert.equals(tostring(T0), logs[1].timestamp)
    assert.same({ "pay", "node-1", "GENERAL" }, { logs[1].service, logs[1].serviceInstance, logs[1].layer })
    assert.equals("json", logs[1].body.type)
    assert.same(cjson.decode(body), cjson.decode(logs[1].body.json.json))
    assert.equals("trace-1", logs[1].traceContext.traceId)
    assert.same({ { key = "LOG_KIND", value = "NET_PROFILING_SAMPLED_TRACE" } }, logs[1].tags.data)
  end)

  it("records collectSpanEvents span attached events", function()
    local event = { startTime = { seconds = 1700000000, nanos = 123456789 }, event = "HTTP Request Sampling",
      endTime = { seconds = 1700000001, nanos = 5 }, tags = { { key = "data_size", value = "12KB" } },
      summary = {}, traceContext = { type = 1, traceId = "b3-trace", traceSegmentId = "", spanId = "b3-span" } }
    assert(call(client, "collect_span_events", { event }))
    local events = stub:wait_span_events(1)
    assert.same({ seconds = "1700000000", nanos = 123456789 }, events[1].startTime)
    assert.same({ seconds = "1700000001", nanos = 5 }, events[1].endTime)
    assert.equals("HTTP Request Sampling", events[1].event)
    assert.same({ { key = "data_size", value = "12KB" } }, events[1].tags)
    assert.same({ type = "ZIPKIN", traceId = "b3-trace", traceSegmentId = "", spanId = "b3-span" },
      events[1].traceContext)
  end)

  it("fails queryPolicies with INTERNAL when the policy file is not an object of objects", function()
    local fh = assert(io.open(stub.policies, "w"))
    fh:write('["cart"]')
    fh:close()
    local response, why, code = call(client, "query_policies", { policies = { { serviceName = "cart" } } })
    assert.is_nil(response)
    assert.equals("INTERNAL", code)
    assert.matches("policy file", why)
  end)
end)
