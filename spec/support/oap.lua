-- oap.lua - runs the stand-in SkyWalking OAP (spec/support/oap/oap_stub.py)
-- for specs: start it (it generates its Python gRPC modules from
-- proto/skywalking as it starts), wait for its port, script the profiling
-- tasks it hands out, read what it recorded, stop it.
--
--   local stub = assert(oap.start({ auth = "token" }))
--   stub:write_tasks({ { taskId = "t1", serviceName = "svc", updateTime = ms } })
--   local lines = stub:wait_records("collectProfilingData", 3)
--   stub:stop()   -- then e2e.rmdir(stub.dir)
--
-- Records are the stub's JSON lines decoded: rpc, call, time (ms), metadata,
-- and message (proto3 JSON: proto field names, int64 values as strings) with
-- seq for streamed messages, or rejected = "UNAUTHENTICATED".
local clock = require("support.clock")
local e2e = require("support.e2e")
local cjson = require("cjson")

local _M = {}
local Stub = {}
Stub.__index = Stub

_M.python = "/usr/bin/python3"
_M.script = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/oap/oap_stub.py"

-- Polls fn every 0.1 s, at most `tries` times, until it returns a value.
local function poll(fn, tries)
  for _ = 1, tries do
    local v = fn()
    if v ~= nil then
      return v
    end
    os.execute("sleep 0.1")
  end
  return nil
end

local function command_line(self, opts)
  local words = { _M.python, _M.script, "--port", tostring(opts.port or 0),
    "--record", self.record, "--tasks", self.tasks }
  if opts.auth then
    words[#words + 1] = "--auth"
    words[#words + 1] = opts.auth
  end
  if opts.tls then
    words[#words + 1] = "--tls"
    words[#words + 1] = opts.tls.cert
    words[#words + 1] = opts.tls.key
  end
  for i, w in ipairs(words) do
    words[i] = e2e.quote(w)
  end
  return table.concat(words, " ")
end

-- Starts the stub. opts (all optional): dir (its files go there; default a
-- new temp dir, see e2e.rmdir), port (default 0: any), auth (required
-- token), tls = { cert = PEM path, key = PEM path }. Returns the stub, or nil
-- and the reason (its stderr) when it did not come up.
function _M.start(opts)
  opts = opts or {}
  local dir = opts.dir or e2e.tmpdir()
  local self = setmetatable({ dir = dir, record = dir .. "/oap-record.jsonl", tasks = dir .. "/oap-tasks.json",
    out = dir .. "/oap.out", err = dir .. "/oap.err", pid_file = dir .. "/oap.pid",
    exit_file = dir .. "/oap.exit" }, Stub)
  -- A restart in the same directory must not read the previous run's files.
  os.remove(self.exit_file)
  os.remove(self.pid_file)
  os.remove(self.out)
  os.execute(string.format("(%s >%s 2>%s & echo $! >%s; wait $!; echo $? >%s) >/dev/null 2>&1 &",
    command_line(self, opts),
    e2e.quote(self.out), e2e.quote(self.err), e2e.quote(self.pid_file), e2e.quote(self.exit_file)))
  self.pid = poll(function() return tonumber(e2e.read_all(self.pid_file) or "") end, 50)
  self.port = poll(function()
    local port = tonumber((e2e.read_all(self.out) or ""):match("port (%d+)"))
    if port or self:exit_status() then
      return port or false
    end
  end, 150)
  if not self.port then
    self:stop()
    return nil, "the stand-in OAP did not start: " .. self:stderr()
  end
  return self
end

function Stub:address()
  return "127.0.0.1:" .. tostring(self.port)
end

function Stub:stderr()
  return e2e.read_all(self.err) or ""
end

-- The stub's exit status once it has exited, else nil.
function Stub:exit_status()
  return tonumber(e2e.read_all(self.exit_file) or "")
end

-- Replaces the task list queryTasks answers from (atomically: the stub never
-- sees half a file). Each task: taskId, updateTime (ms), and processIds
-- (list) or serviceName (+ instanceName, labels); optional targetType
-- (ON_CPU), triggerType (FIXED_TIME), startTime (ms, default updateTime),
-- duration (s, default 60), extensionConfig (table; absent: "null"). cjson
-- writes an empty table as {} (so an empty task list is written by hand) and
-- numbers with 14 significant digits, enough for millisecond times.
function Stub:write_tasks(tasks)
  local tmp = self.tasks .. ".tmp"
  local fh = assert(io.open(tmp, "w"))
  fh:write(#tasks == 0 and "[]" or cjson.encode(tasks))
  fh:close()
  assert(os.rename(tmp, self.tasks))
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
      local host = p.hostProcess or {}
      processes[tostring(host.pid) .. " " .. tostring((host.entity or {}).processName)] = true
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
  if not self.pid then
    return self:exit_status()
  end
  os.execute("kill -TERM " .. self.pid .. " 2>/dev/null")
  local status = poll(function() return self:exit_status() end, 100)
  if not status then
    os.execute("kill -KILL " .. self.pid .. " 2>/dev/null")
  end
  self.pid = nil
  return status
end

return _M
