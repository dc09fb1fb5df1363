-- oap.lua - runs the stand-in SkyWalking OAP (spec/support/oap/oap_stub.py)
-- for specs: start it (it generates its Python gRPC modules from
-- proto/skywalking as it starts), wait for its port, script the profiling
-- tasks and continuous-profiling policies it hands out, read what it
-- recorded, stop it.
--
--   local stub = assert(oap.start({ auth = "token" }))
--   stub:write_tasks({ { taskId = "t1", serviceName = "svc", updateTime = ms } })
--   stub:write_policies("svc", { ON_CPU = { PROCESS_CPU = { Threshold = "50", Period = 5, Count = 3 } } })
--   local lines = stub:wait_records("collectProfilingData", 3)
--   local reports = stub:wait_profiling_reports(1)   -- reports[1].taskId
--   local cpu = stub:wait_meters("rover_con_p_process_cpu", 1)
--   stub:stop()   -- then e2e.rmdir(stub.dir)
--
-- Records are the stub's JSON lines decoded: rpc, call, time (ms), metadata,
-- and message (proto3 JSON: proto field names, int64 values as strings) with
-- seq for streamed messages, answer (the Commands sent back) for
-- queryPolicies and reportProfilingTask and task (the task it created) for
-- reportProfilingTask, or rejected = "UNAUTHENTICATED".
-- spec/support/oap/README.md lists the rpc names and every function.
local clock = require("support.clock")
local e2e = require("support.e2e")
local cjson = require("cjson")
local stand_in = require("support.stand_in")

local _M = {}
local Stub = stand_in.class()

_M.python = stand_in.PYTHON
_M.script = stand_in.source("spec/support/oap/oap_stub.py")

-- Replaces path's content with text; readers never see half a file.
local function write_atomically(path, text)
  local tmp = path .. ".tmp"
  local fh = assert(io.open(tmp, "w"))
  fh:write(text)
  fh:close()
  assert(os.rename(tmp, path))
end

local function command_line(self, opts)
  local words = { _M.python, _M.script, "--port", tostring(opts.port or 0),
    "--record", self.record, "--tasks", self.tasks, "--policies", self.policies }
  if opts.auth then
    words[#words + 1] = "--auth"
    words[#words + 1] = opts.auth
  end
  if opts.tls then
    words[#words + 1] = "--tls"
    words[#words + 1] = opts.tls.cert
    words[#words + 1] = opts.tls.key
  end
  return stand_in.command_line(words)
end

-- Starts the stub. opts (all optional): dir (its files go there; default a
-- new temp dir, see e2e.rmdir), port (default 0: any), auth (required
-- token), tls = { cert = PEM path, key = PEM path }. Returns the stub, or nil
-- and the reason (its stderr) when it did not come up.
function _M.start(opts)
  opts = opts or {}
  local dir = opts.dir or e2e.tmpdir()
  local self = setmetatable({ dir = dir, record = dir .. "/oap-record.jsonl", tasks = dir .. "/oap-tasks.json",
    policies = dir .. "/oap-policies.json", out = dir .. "/oap.out", err = dir .. "/oap.err",
    pid_file = dir .. "/oap.pid", exit_file = dir .. "/oap.exit" }, Stub)
  -- A restart in the same directory does not read the previous run's files.
  stand_in.launch(self, command_line(self, opts))
  local ports = stand_in.wait_ports(self, "port (%d+)", 15)
  self.port = ports and ports[1]
  if not self.port then
    self:stop()
    return nil, "the stand-in OAP did not start: " .. self:stderr()
  end
  return self
end

function Stub:address()
  return "127.0.0.1:" .. tostring(self.port)
end

-- Replaces the task list queryTasks answers from (atomically: the stub never
-- sees half a file). Each task: taskId, updateTime (ms), and processIds
-- (list) or serviceName (+ instanceName, labels); optional targetType
-- (ON_CPU), triggerType (FIXED_TIME), startTime (ms, default updateTime),
-- duration (s, default 60), extensionConfig (table; absent: "null"). cjson
-- writes an empty table as {} (so an empty task list is written by hand) and
-- numbers with 14 significant digits, enough for millisecond times.
function Stub:write_tasks(tasks)
  write_atomically(self.tasks, #tasks == 0 and "[]" or cjson.encode(tasks))
end

-- Sets the continuous-profiling policy queryPolicies hands out for one
-- service, or removes it (profiling nil). profiling is OAP's "Profiling"
-- object: target type (ON_CPU, OFF_CPU, NETWORK) -> check type
-- (PROCESS_CPU, PROCESS_THREAD_COUNT, SYSTEM_LOAD, HTTP_ERROR_RATE,
-- HTTP_AVG_RESPONSE_TIME) -> { Threshold = string, Period = s, Count = n,
-- URIList = { paths }, URIRegex = string }, sent as written (leave out an
-- empty URIList: cjson writes {} for it). The policy's UUID is a hash of its
-- content, so it changes exactly when the policy does. Returns nothing.
function Stub:write_policies(service, profiling)
  local text = e2e.read_all(self.policies)
  local all = text and cjson.decode(text) or {}
  all[service] = profiling
  write_atomically(self.policies, next(all) == nil and "{}" or cjson.encode(all))
end

-- Every complete recorded line, decoded; only those of `rpc` when given.
function Stub:records(rpc)
  local out = {}
  for line in (e2e.read_all(self.record) or ""):gmatch("([^\n]*)\n") do
    local rec = cjson.decode(line)
    if rpc == nil or rec.rpc == rpc then
      out[#out + 1] = rec
    end
  end
  return out
end

-- The collectProfilingData records of one task, oldest first, each as
-- { record, task }: a stream names its task in its first message only, and
-- the later messages belong to it.
function Stub:task_data(task_id)
  local out, current = {}, nil
  for _, r in ipairs(self:records("collectProfilingData")) do
    current = r.message.task or current
    if current and current.taskId == task_id then
      out[#out + 1] = { record = r, task = current }
    end
  end
  return out
end

-- Waits (up to `seconds`, default 10) until at least n records of rpc
-- exist; returns them, or nil on timeout.
function Stub:wait_records(rpc, n, seconds)
  return clock.wait_for(function()
    local recs = self:records(rpc)
    if #recs >= n then
      return recs
    end
  end, seconds)
end

-- A list of { key, value } pairs (a command's args, a process's
-- properties) as a table key -> value; nil is an empty list.
function _M.key_values(list)
  local out = {}
  for _, kv in ipairs(list or {}) do
    out[kv.key] = kv.value
  end
  return out
end

-- A command's arguments as a table key -> value (every value a string).
function _M.command_args(command)
  return _M.key_values(command.args)
end

-- The stand-in's id of a process entity: a hash of its three names, as
-- OAP derives its own (oap_stub.py's process_id).
function _M.process_id(service, instance, process)
  local p = assert(io.popen(string.format("printf '%%s\\0%%s\\0%%s' %s %s %s | sha256sum", e2e.quote(service),
    e2e.quote(instance), e2e.quote(process))))
  local out = p:read("*a")
  p:close()
  return out:match("^(%x+)")
end

-- Waits (up to `seconds`, default 10) until fn(self) returns at least n
-- items; returns them, or nil on timeout.
local function wait_list(self, fn, n, seconds)
  return clock.wait_for(function()
    local list = fn(self)
    if #list >= n then
      return list
    end
  end, seconds)
end

-- The tasks of the reportProfilingTask calls received, oldest first:
-- { taskId = the id the stub answered with, processId = the reported
-- process's id (as reportProcesses gives it), targetType = "ON_CPU",
-- "OFF_CPU" or "NETWORK", startTime = ms (the stub's clock), duration = s,
-- report = the ContinuousProfilingReport (proto3 JSON: cause types as enum
-- names), time = ms, call = n }. The stub does not hand these tasks out in
-- queryTasks (OAP does not either: the agent runs them itself). Failed
-- reports are left out.
function Stub:profiling_reports()
  local out = {}
  for _, r in ipairs(self:records("reportProfilingTask")) do
    if r.task then
      local t = r.task
      out[#out + 1] = { taskId = t.taskId, processId = t.processId, targetType = t.targetType,
        startTime = t.startTime, duration = t.duration, report = r.message, time = r.time, call = r.call }
    end
  end
  return out
end

function Stub:wait_profiling_reports(n, seconds)
  return wait_list(self, Stub.profiling_reports, n, seconds)
end

-- One meter of a collectMeterBatch or collectMeter record, flattened. The
-- service, instance and time of a meter that does not carry them are those
-- of the meter before it in the same collection (batch) or stream.
local function flat_meter(m, from)
  local one = m.singleValue or m.histogram
  local labels = {}
  for _, l in ipairs(one.labels) do
    labels[l.name] = l.value
  end
  local buckets
  for i, b in ipairs(m.histogram and m.histogram.values or {}) do
    buckets = buckets or {}
    buckets[i] = { bucket = b.bucket, count = tonumber(b.count), isNegativeInfinity = b.isNegativeInfinity }
  end
  local ts = tonumber(m.timestamp)
  return { name = one.name, labels = labels, value = m.singleValue and m.singleValue.value, buckets = buckets,
    service = m.service ~= "" and m.service or from.service,
    instance = m.serviceInstance ~= "" and m.serviceInstance or from.instance,
    timestamp = ts ~= 0 and ts or from.timestamp }
end

-- Every meter received (collectMeterBatch and collectMeter), oldest first;
-- only those named `name` when given. Each: { name, labels = { name ->
-- value }, value (single values) or buckets (histograms: { bucket, count,
-- isNegativeInfinity } in the order sent), service, instance, timestamp
-- (ms), call, time (ms at receipt) }.
function Stub:meters(name)
  local out, all, last = {}, {}, {}
  for _, r in ipairs(self:records()) do
    local list = r.rpc == "collectMeterBatch" and r.message.meterData or r.rpc == "collectMeter" and { r.message }
    local from = r.rpc == "collectMeter" and last[r.call] or {}
    for _, m in ipairs(list or {}) do
      from = flat_meter(m, from)
      from.call, from.time = r.call, r.time
      all[#all + 1] = from
    end
    last[r.call] = from
  end
  for _, m in ipairs(all) do
    if name == nil or m.name == name then
      out[#out + 1] = m
    end
  end
  return out
end

-- The sum of the values of the meters named name whose labels include all
-- of want.
function Stub:meter_sum(name, want)
  local total = 0
  for _, m in ipairs(self:meters(name)) do
    local match = true
    for k, v in pairs(want) do
      match = match and m.labels[k] == v
    end
    if match then
      total = total + m.value
    end
  end
  return total
end

function Stub:wait_meters(name, n, seconds)
  return wait_list(self, function(s) return s:meters(name) end, n, seconds)
end

-- The messages of one client stream's records, oldest first.
local function messages(self, rpc)
  local out = {}
  for _, r in ipairs(self:records(rpc)) do
    out[#out + 1] = r.message
  end
  return out
end

-- The LogData received (collectLogs), oldest first, as proto3 JSON
-- (timestamp a string of ms; body.json.json the JSON text; tags.data a list
-- of { key, value }).
function Stub:logs()
  return messages(self, "collectLogs")
end

function Stub:wait_logs(n, seconds)
  return wait_list(self, Stub.logs, n, seconds)
end

-- The SpanAttachedEvent received (collectSpanEvents), oldest first, as
-- proto3 JSON (startTime/endTime { seconds = string, nanos = number },
-- traceContext.type "SKYWALKING" or "ZIPKIN").
function Stub:span_events()
  return messages(self, "collectSpanEvents")
end

function Stub:wait_span_events(n, seconds)
  return wait_list(self, Stub.span_events, n, seconds)
end

-- The keys of a set, sorted, as one line; a count follows each key whose
-- value is a number.
local function keys_line(set)
  local out = {}
  for k, v in pairs(set) do
    out[#out + 1] = type(v) == "number" and k .. " x" .. v or k
  end
  table.sort(out)
  return #out > 0 and table.concat(out, ", ") or "none"
end

-- What the stub recorded, in short, for failure messages: how many calls of
-- each rpc, the processes reported (pid and process name) and the tasks
-- whose data arrived.
function Stub:summary()
  local calls, processes, tasks = {}, {}, {}
  for _, r in ipairs(self:records()) do
    calls[r.rpc] = (calls[r.rpc] or 0) + 1
    for _, p in ipairs(r.rpc == "reportProcesses" and r.message.processes or {}) do
      local meta = p.hostProcess or p.k8sProcess or {}
      processes[tostring(meta.pid) .. " " .. tostring((meta.entity or {}).processName)] = true
    end
    if r.rpc == "collectProfilingData" and r.message.task then
      tasks[r.message.task.taskId] = true
    end
  end
  return string.format("the stand-in OAP recorded calls: %s; processes reported: %s; data of tasks: %s",
    keys_line(calls), keys_line(processes), keys_line(tasks))
end

-- Stops the stub with SIGTERM; returns its exit status (nil if it had to be
-- killed). Safe to call twice.
function Stub:stop()
  return stand_in.signal(self, "TERM")
end

return _M
