-- Specs for the stand-in SkyWalking OAP (spec/support/oap): a Python gRPC
-- client (client_check.py) makes the calls an agent makes; the specs check
-- the answers and what the stub recorded, through spec/support/oap.lua.
local e2e = require("support.e2e")
local cjson = require("cjson")
local oap = require("support.oap")

local CLIENT = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/oap/client_check.py"
local AGENT = "0b7e1c0e-5d1b-4b8e-9a57-2f4f3c1e7a10"
local HOST_COMMAND_LINE = "/usr/bin/w\195\182rker --name=caf\195\169 \226\128\148 \240\159\154\128"
local ARG_KEYS = { "SerialNumber", "TaskId", "ProcessId", "TaskUpdateTime", "TriggerType", "TargetType",
  "TaskStartTime", "ExtensionConfigJSON", "FixedTriggerDuration" }
local T0 = 1700000000000

-- Runs client_check.py once; returns its decoded outcome.
local function client(stub, action, flags)
  local cmd = table.concat({ oap.python, e2e.quote(CLIENT), "--port", tostring(stub.port), flags or "", action }, " ")
  local code, out, err = e2e.run(cmd)
  assert(code == 0, err)
  return cjson.decode(out)
end

-- A command's arguments: key -> value, and the keys in order.
local function args_of(command)
  local map, keys = {}, {}
  for i, kv in ipairs(command.args) do
    map[kv.key], keys[i] = kv.value, kv.key
  end
  return map, keys
end

local function query(stub, latest, flags)
  local r = client(stub, "query", "--latest " .. string.format("%d", latest) .. " " .. (flags or ""))
  assert.equals("OK", r.code)
  return r.response.commands
end

describe("stand-in OAP", function()
  local stub

  before_each(function()
    stub = assert(oap.start())
  end)

  after_each(function()
    stub:stop()
    e2e.rmdir(stub.dir)
  end)

  it("assigns stable process ids on reportProcesses and records the call", function()
    local first = client(stub, "report")
    assert.equals("OK", first.code)
    local procs = first.response.processes
    assert.equals(2, #procs)
    assert.equals(4242, procs[1].k8sProcess.pid)
    assert.equals("shop::cart.default", procs[1].k8sProcess.entityMetadata.serviceName)
    assert.same({ "k8s-service" }, procs[1].k8sProcess.entityMetadata.labels)
    assert.equals(4343, procs[2].hostProcess.pid)
    assert.equals("worker", procs[2].hostProcess.entityMetadata.processName)
    assert.matches("^%x+$", procs[1].processId)
    assert.are_not.equal(procs[1].processId, procs[2].processId)

    local again = client(stub, "report")
    assert.equals(procs[1].processId, again.response.processes[1].processId)
    assert.equals(procs[2].processId, again.response.processes[2].processId)

    local recs = stub:wait_records("reportProcesses", 2)
    assert.equals(2, #recs)
    assert.same({ 1, 2 }, { recs[1].call, recs[2].call })
    assert.is_number(recs[1].time)
    assert.matches("grpc%-python", recs[1].metadata["user-agent"])
    local msg = recs[1].message
    assert.equals(AGENT, msg.ebpfAgentID)
    assert.equals("K8S_SERVICE", msg.processes[1].k8sProcess.entity.layer)
    assert.same({ key = "command_line", value = HOST_COMMAND_LINE }, msg.processes[2].hostProcess.properties[1])
  end)

  it("answers keepAlive with empty commands and records it", function()
    local r = client(stub, "keepalive")
    assert.equals("OK", r.code)
    assert.same({}, r.response.commands)
    local rec = stub:wait_records("keepAlive", 1)[1]
    assert.equals(AGENT, rec.message.ebpfAgentID)
    assert.equals(2, #rec.message.processes)
    assert.same({ { key = "support_ebpf_profiling", value = "true" } }, rec.message.processes[1].properties)
  end)

  it("hands out scripted tasks encoded as OAP's EBPFProfilingTaskQuery command", function()
    stub:write_tasks({ { taskId = "task-on", processIds = { "proc-a" }, updateTime = T0,
      startTime = T0 + 5000, duration = 120, targetType = "ON_CPU" } })
    local commands = query(stub, 0)
    assert.equals(1, #commands)
    assert.equals("EBPFProfilingTaskQuery", commands[1].command)
    local args, keys = args_of(commands[1])
    assert.same(ARG_KEYS, keys)
    assert.matches("^%x+%-%x+%-4%x+%-%x+%-%x+$", args.SerialNumber)
    assert.same({ TaskId = "task-on", ProcessId = "proc-a", TaskUpdateTime = "1700000000000",
      TriggerType = "FIXED_TIME", TargetType = "ON_CPU", TaskStartTime = "1700000005000",
      ExtensionConfigJSON = "null", FixedTriggerDuration = "120", SerialNumber = args.SerialNumber }, args)

    assert.same({}, query(stub, T0))

    stub:write_tasks({ { taskId = "task-on", processIds = { "proc-a" }, updateTime = T0 },
      { taskId = "task-off", processIds = { "proc-b" }, updateTime = T0 + 1000, targetType = "OFF_CPU" } })
    commands = query(stub, T0)
    assert.equals(1, #commands)
    args = args_of(commands[1])
    assert.equals("task-off", args.TaskId)
    assert.equals("OFF_CPU", args.TargetType)
    assert.equals("1700000001000", args.TaskStartTime)
    assert.equals("60", args.FixedTriggerDuration)

    local recs = stub:wait_records("queryTasks", 3)
    assert.equals(AGENT, recs[3].message.roverInstanceId)
    assert.equals("1700000000000", recs[3].message.latestUpdateTime)
  end)

  it("hands out nothing once the task list is emptied", function()
    stub:write_tasks({ { taskId = "task-on", processIds = { "proc-a" }, updateTime = T0 } })
    assert.equals(1, #query(stub, 0))
    stub:write_tasks({})
    assert.same({}, query(stub, 0))
  end)

  it("splits ON_CPU tasks per process, joins NETWORK processes, writes extension config as JSON", function()
    local ext = { NetworkSamplings = { { URIRegex = "/api/.*", MinDuration = 500, When4xx = true, When5xx = true } } }
    stub:write_tasks({
      { taskId = "on", processIds = { "p1", "p2" }, updateTime = T0 },
      { taskId = "net", processIds = { "p1", "p2" }, updateTime = T0, targetType = "NETWORK", extensionConfig = ext },
    })
    local commands = query(stub, 0)
    assert.equals(3, #commands)
    assert.equals("p1", args_of(commands[1]).ProcessId)
    assert.equals("p2", args_of(commands[2]).ProcessId)
    local net = args_of(commands[3])
    assert.equals("p1,p2", net.ProcessId)
    assert.same(ext, cjson.decode(net.ExtensionConfigJSON))
    assert.not_matches(" ", net.ExtensionConfigJSON)
  end)

  it("resolves a task naming a service to the querying agent's profilable processes", function()
    local ids = client(stub, "report").response.processes
    stub:write_tasks({ { taskId = "by-service", serviceName = "spec-svc", updateTime = T0 },
      { taskId = "by-labels", serviceName = "shop::cart.default", labels = { "other" }, updateTime = T0 } })
    local commands = query(stub, 0)
    assert.equals(1, #commands)
    assert.equals(ids[2].processId, args_of(commands[1]).ProcessId)
    assert.same({}, query(stub, 0, "--agent another-agent"))
  end)

  it("fails queryTasks with INTERNAL when the task file is not a JSON list", function()
    local fh = assert(io.open(stub.tasks, "w"))
    fh:write('{"taskId": "x"}')
    fh:close()
    local r = client(stub, "query")
    assert.equals("INTERNAL", r.code)
    assert.matches("task file", r.details)
  end)

  it("records a collectProfilingData stream message by message", function()
    local r = client(stub, "stream")
    assert.equals("OK", r.code)
    assert.same({}, r.response.commands)
    local recs = stub:wait_records("collectProfilingData", 3)
    assert.equals(3, #recs)
    for i, rec in ipairs(recs) do
      assert.equals(i - 1, rec.seq)
      assert.equals(recs[1].call, rec.call)
    end
    local first = recs[1].message
    assert.same({ taskId = "task-1", processId = "proc-1", profilingStartTime = "1700000000000",
      currentTime = "1700000005000" }, first.task)
    assert.equals(5, first.onCPU.dumpCount)
    assert.equals("PROCESS_KERNEL_SPACE", first.onCPU.stacks[1].stackType)
    assert.same({ "spin", "main", "__libc_start_main" }, first.onCPU.stacks[2].stackSymbols)
    assert.is_nil(recs[2].message.task)
    assert.equals(3, recs[2].message.onCPU.dumpCount)
    assert.same({ 2, "12345" }, { recs[3].message.offCPU.switchCount, recs[3].message.offCPU.duration })
  end)

  it("stops cleanly on SIGTERM", function()
    assert.equals(0, stub:stop())
  end)
end)

describe("stand-in OAP with --auth", function()
  local stub

  before_each(function()
    stub = assert(oap.start({ auth = "s3cret" }))
  end)

  after_each(function()
    stub:stop()
    e2e.rmdir(stub.dir)
  end)

  it("rejects calls without the token with UNAUTHENTICATED and records them", function()
    assert.equals("UNAUTHENTICATED", client(stub, "report").code)
    assert.equals("UNAUTHENTICATED", client(stub, "stream", "--auth wrong").code)
    local recs = stub:wait_records(nil, 2)
    assert.equals("UNAUTHENTICATED", recs[1].rejected)
    assert.is_nil(recs[1].message)
    assert.equals("collectProfilingData", recs[2].rpc)
    assert.equals("wrong", recs[2].metadata.authentication)
  end)

  it("accepts calls carrying the token", function()
    assert.equals("OK", client(stub, "keepalive", "--auth s3cret").code)
    assert.equals("OK", client(stub, "stream", "--auth s3cret").code)
    local rec = stub:wait_records("keepAlive", 1)[1]
    assert.equals("s3cret", rec.metadata.authentication)
    assert.equals(3, #stub:wait_records("collectProfilingData", 3))
  end)
end)

describe("stand-in OAP with --tls", function()
  local stub, dir

  before_each(function()
    dir = e2e.tmpdir()
    local code, _, err = e2e.run(string.format("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      .. "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s/key.pem -out %s/cert.pem", dir, dir))
    assert(code == 0, err)
    stub = assert(oap.start({ dir = dir, tls = { cert = dir .. "/cert.pem", key = dir .. "/key.pem" } }))
  end)

  after_each(function()
    stub:stop()
    e2e.rmdir(dir)
  end)

  it("serves clients that trust its certificate", function()
    local r = client(stub, "report", "--ca " .. dir .. "/cert.pem")
    assert.equals("OK", r.code)
    assert.equals(2, #r.response.processes)
    assert.equals(1, #stub:wait_records("reportProcesses", 1))
  end)

  it("does not serve plaintext clients", function()
    assert.equals("UNAVAILABLE", client(stub, "keepalive").code)
    assert.same({}, stub:records())
  end)
end)
