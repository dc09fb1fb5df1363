-- oap_client.lua - SkyWalking OAP calls for the Rover drop-in: messages are
-- Lua tables encoded with the SkyWalking descriptors, sent through the
-- runtime's gRPC transport (runtime/transport*.c); results come back through
-- poll(), which a timer calls, as callback(response) or callback(nil, why,
-- code). code is the gRPC status by name ("UNAVAILABLE", ...) when the call
-- was made and failed, nil when it could not be made at all; why starts
-- with that name and says what failed, never a bare number.
local C = require("moonrover.consts")
local config = require("moonrover.config")
local protobuf = require("moonrover.lib.protobuf")
local rt = require("moonrover.rt")

local _M = {}
local mt = { __index = _M }

_M.REPORT_PROCESSES = "/skywalking.v3.EBPFProcessService/reportProcesses"
_M.KEEP_ALIVE = "/skywalking.v3.EBPFProcessService/keepAlive"
_M.QUERY_TASKS = "/skywalking.v3.EBPFProfilingService/queryTasks"
_M.COLLECT_PROFILING_DATA = "/skywalking.v3.EBPFProfilingService/collectProfilingData"
_M.QUERY_POLICIES = "/skywalking.v3.ContinuousProfilingService/queryPolicies"
_M.REPORT_PROFILING_TASK = "/skywalking.v3.ContinuousProfilingService/reportProfilingTask"
_M.COLLECT_METER_BATCH = "/skywalking.v3.MeterReportService/collectBatch"
_M.COLLECT_LOGS = "/skywalking.v3.LogReportService/collect"
_M.COLLECT_SPAN_EVENTS = "/skywalking.v3.SpanAttachedEventReportService/collect"

local TIMEOUT_MS = 20000

-- gRPC status codes by number (grpc/impl/codegen/status.h).
local STATUS = { [0] = "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
  "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
  "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED" }

-- The name of a gRPC status code ("STATUS_99" for one gRPC does not define).
function _M.status_name(code)
  return STATUS[code] or string.format("STATUS_%d", code)
end

-- The codes of calls that did not reach OAP (rather than OAP refusing them).
_M.UNREACHABLE = { UNAVAILABLE = true, DEADLINE_EXCEEDED = true }

-- The SkyWalking v3 messages (proto/skywalking), from the descriptor set the
-- runtime carries; or nil and why.
function _M.schema()
  local ffi, lib = rt.ffi, rt.lib
  local len = ffi.new("size_t[1]")
  local p = lib.mr_skywalking_descriptors(len)
  return protobuf.load_descriptor_set(ffi.string(p, len[0]))
end

-- The transport options from Rover's core.backend section.
function _M.options(cfg)
  return config.read_fields(cfg, {
    { "address", "core.backend.addr", config.get_string },
    { "tls", "core.backend.enable_tls", config.get_bool },
    { "ca_path", "core.backend.ca_pem_path", config.get_string },
    { "cert_path", "core.backend.client_pem_path", config.get_string },
    { "key_path", "core.backend.client_key_path", config.get_string },
    { "insecure_skip_verify", "core.backend.insecure_skip_verify", config.get_bool },
    { "authentication", "core.backend.authentication", config.get_string },
  })
end

function _M.open(cfg)
  local o, err = _M.options(cfg)
  if not o then
    return nil, err
  end
  local s
  s, err = _M.schema()
  if not s then
    return nil, err
  end
  local ffi, lib = rt.ffi, rt.lib
  local c = ffi.new("struct mr_transport_opts")
  local keep = { o.address, o.ca_path, o.cert_path, o.key_path, o.authentication }
  c.address, c.ca_path, c.cert_path, c.key_path, c.authentication = keep[1], keep[2], keep[3], keep[4], keep[5]
  c.tls = o.tls and 1 or 0
  c.insecure_skip_verify = o.insecure_skip_verify and 1 or 0
  local handle
  handle, err = rt.call(lib.mr_transport_open, c)
  if not handle then
    return nil, err
  end
  return setmetatable({ handle = ffi.gc(handle, lib.mr_transport_close), schema = s, pending = {},
    address = o.address }, mt)
end

local function fail_now(callback, why)
  callback(nil, why)
  return nil, why
end

-- A unary call: request is a table of request_type; callback(response
-- table of response_type) or callback(nil, why).
function _M:unary(method, request_type, request, response_type, callback)
  local bytes, err = protobuf.encode(self.schema, request_type, request)
  if not bytes then
    return fail_now(callback, err)
  end
  local id
  id, err = rt.call(rt.lib.mr_transport_unary, self.handle, method, bytes, #bytes, TIMEOUT_MS)
  if not id then
    return fail_now(callback, err)
  end
  self.pending[tonumber(id)] = { callback = callback, response_type = response_type }
  return true
end

-- After a stream could not take a message or be finished (it ended already:
-- OAP went away, say), the call's own result, due soon, says why; the
-- callback gets that, or the local error when the call ended well anyway.
local function defer_failure(self, id, callback, local_err)
  self.pending[tonumber(id)] = { callback = function(_, why, code)
    callback(nil, why or local_err, why and code)
  end }
  return nil, local_err
end

-- A client stream of messages (tables of message_type), then one response.
function _M:stream(method, message_type, messages, response_type, callback)
  local lib = rt.lib
  local id, err = rt.call(lib.mr_transport_stream_open, self.handle, method, TIMEOUT_MS)
  if not id then
    return fail_now(callback, err)
  end
  for _, m in ipairs(messages) do
    local bytes, sent
    bytes, err = protobuf.encode(self.schema, message_type, m)
    if bytes then
      sent, err = rt.call(lib.mr_transport_stream_send, self.handle, id, bytes, #bytes)
    end
    if not sent then
      rt.call(lib.mr_transport_stream_finish, self.handle, id)
      return defer_failure(self, id, callback, err)
    end
  end
  local finished
  finished, err = rt.call(lib.mr_transport_stream_finish, self.handle, id)
  if not finished then
    return defer_failure(self, id, callback, err)
  end
  self.pending[tonumber(id)] = { callback = callback, response_type = response_type }
  return true
end

-- Continuous profiling and NETWORK tasks. Each answer is a
-- skywalking.v3.Commands table; only those of query_policies (one
-- "ContinuousProfilingPolicyQuery" command, or none when nothing changed) and
-- report_profiling_task (one "ContinuousProfilingReportTask" command with the
-- TaskId) carry anything.

-- query: a ContinuousProfilingPolicyQuery table.
function _M:query_policies(query, callback)
  return self:unary(_M.QUERY_POLICIES, "skywalking.v3.ContinuousProfilingPolicyQuery", query,
    "skywalking.v3.Commands", callback)
end

-- report: a ContinuousProfilingReport table.
function _M:report_profiling_task(report, callback)
  return self:unary(_M.REPORT_PROFILING_TASK, "skywalking.v3.ContinuousProfilingReport", report,
    "skywalking.v3.Commands", callback)
end

-- collections: a list of MeterDataCollection tables (one per service instance).
function _M:collect_meter_batch(collections, callback)
  return self:stream(_M.COLLECT_METER_BATCH, "skywalking.v3.MeterDataCollection", collections,
    "skywalking.v3.Commands", callback)
end

-- logs: a list of LogData tables.
function _M:collect_logs(logs, callback)
  return self:stream(_M.COLLECT_LOGS, "skywalking.v3.LogData", logs, "skywalking.v3.Commands", callback)
end

-- events: a list of SpanAttachedEvent tables.
function _M:collect_span_events(events, callback)
  return self:stream(_M.COLLECT_SPAN_EVENTS, "skywalking.v3.SpanAttachedEvent", events,
    "skywalking.v3.Commands", callback)
end

local function deliver(self, r)
  local ffi = rt.ffi
  local p = self.pending[tonumber(r.id)]
  if not p then
    return
  end
  self.pending[tonumber(r.id)] = nil
  if r.state ~= C.MR_RPC_OK then
    local code, details = _M.status_name(r.code), ffi.string(r.details)
    p.callback(nil, details ~= "" and code .. ": " .. details or code .. " (gRPC gave no details)", code)
    return
  end
  local response = {}
  if p.response_type and r.response ~= nil then
    local err
    response, err = protobuf.decode(self.schema, p.response_type, ffi.string(r.response, r.response_len))
    if not response then
      p.callback(nil, "unreadable response: " .. err)
      return
    end
  end
  p.callback(response)
end

-- Hands finished calls to their callbacks.
function _M:poll()
  local r = rt.ffi.new("struct mr_rpc_result")
  while rt.lib.mr_transport_next(self.handle, r) == 1 do
    deliver(self, r)
  end
end

function _M:connected()
  local s = rt.ffi.new("struct mr_transport_stats")
  rt.lib.mr_transport_stats(self.handle, s)
  return s.connected == 1
end

return _M
