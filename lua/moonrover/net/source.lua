-- source.lua - the network streams of a data plane of our own (not the
-- agent's: `moonrover trace` and specs), read into a tracer: connection
-- events first, then the data records, each queue's runs in place. A drain
-- hands over at most a given number of records per queue, so that a caller
-- keeps its clock (ticks, its deadline, signals) under a load it cannot
-- keep up with: the queues then fill and drop, and count it. The process
-- stream (forks, execs, exits) is open only for a trace that follows a
-- process's children (opened with pids).
local bit = require("bit")
local rt = require("moonrover.rt")

local _M = {}
local mt = { __index = _M }

local RUN_MAX = 4096
local DRAIN_MAX = RUN_MAX

-- opts: pids (list, or nil for every process but this one: then no process
-- stream), payload_bytes, queue_bytes (the net stream's queue),
-- max_connections, ring_bytes (the net stream's kernel ring: a
-- --network-buffer; 0 or nil: 512 KiB per possible CPU). Returns the source (not started yet), or nil and why.
function _M.open(opts)
  local ffi, lib = rt.ffi, rt.lib
  local o = ffi.new("struct mr_data_plane_opts")
  local pids = opts.pids or {}
  local pid_array = ffi.new("int32_t[?]", math.max(#pids, 1))
  for i, pid in ipairs(pids) do
    pid_array[i - 1] = pid
  end
  o.flags = #pids > 0 and lib.MR_DATA_PLANE_NET or bit.bor(lib.MR_DATA_PLANE_NET, lib.MR_DATA_PLANE_NO_PROCESS)
  o.net_pids, o.net_npids = #pids > 0 and pid_array or nil, #pids
  o.net_payload_bytes = opts.payload_bytes or 0
  o.net_queue_bytes = opts.queue_bytes or 0
  o.net_max_connections = opts.max_connections or 0
  o.net_ring_bytes = opts.ring_bytes or 0
  local d, err = rt.call(lib.mr_data_plane_open, o)
  if not d then
    return nil, err
  end
  local self = setmetatable({ d = ffi.gc(d, lib.mr_data_plane_close) }, mt)
  self.tcp = ffi.cast("struct mr_tcp_event *", lib.mr_data_plane_storage(d, lib.MR_STREAM_TCP))
  self.process = ffi.cast("struct mr_process_event *", lib.mr_data_plane_storage(d, lib.MR_STREAM_PROCESS))
  self.bytes = ffi.cast("uint8_t *", lib.mr_data_plane_storage(d, lib.MR_STREAM_NET))
  self.index, self.offset, self.run = ffi.new("uint32_t[1]"), ffi.new("uint32_t[1]"), ffi.new("uint32_t[1]")
  return self
end

function _M:start()
  return rt.call(rt.lib.mr_data_plane_start, self.d)
end

-- Waits up to ms for records; true when some came.
function _M:wait(ms)
  return rt.lib.mr_data_plane_wait(self.d, ms) == 1
end

function _M:set_verdict(conn, verdict)
  return rt.call(rt.lib.mr_data_plane_net_verdict, self.d, conn, verdict)
end

-- Asks the kernel not to copy the bytes of direction (enum
-- mr_net_direction) before stream offset skip_to; true, or nil and why.
function _M:set_capture(conn, direction, skip_to)
  return rt.call(rt.lib.mr_data_plane_net_capture, self.d, conn, direction, skip_to)
end

-- Whether the kernel still follows conn (true or false).
function _M:conn_open(conn)
  return rt.lib.mr_data_plane_net_conn_open(self.d, conn) == 1
end

-- Adds pid to (add true) or removes it from the processes traced, for a
-- source opened with pids; true, or nil and why.
function _M:target(pid, add)
  return rt.call(rt.lib.mr_data_plane_net_target, self.d, pid, add and 1 or 0)
end

-- Hands each queued process event (at most DRAIN_MAX) to on_event as
-- { kind, pid, ppid, comm } (the kinds of enum mr_process_event_kind);
-- returns how many.
function _M:drain_processes(on_event)
  local lib, ffi, total = rt.lib, rt.ffi, 0
  local n
  repeat
    n = lib.mr_data_plane_peek(self.d, lib.MR_STREAM_PROCESS, math.min(RUN_MAX, DRAIN_MAX - total), self.index)
    for i = self.index[0], self.index[0] + n - 1 do
      local e = self.process[i]
      on_event({ kind = e.kind, pid = e.pid, ppid = e.ppid, comm = ffi.string(e.comm) })
    end
    lib.mr_data_plane_release(self.d, lib.MR_STREAM_PROCESS, n)
    total = total + n
  until n == 0 or total >= DRAIN_MAX
  return total
end

local function drain_events(self, tracer, limit)
  local lib, total = rt.lib, 0
  local n
  repeat
    n = lib.mr_data_plane_peek(self.d, lib.MR_STREAM_TCP, math.min(RUN_MAX, limit - total), self.index)
    for i = self.index[0], self.index[0] + n - 1 do
      tracer:on_tcp_event(self.tcp[i])
    end
    lib.mr_data_plane_release(self.d, lib.MR_STREAM_TCP, n)
    total = total + n
  until n == 0 or total >= limit
  return total
end

local function drain_data(self, tracer, limit)
  local lib, total = rt.lib, 0
  local n
  repeat
    n = lib.mr_data_plane_peek_bytes(self.d, lib.MR_STREAM_NET, math.min(RUN_MAX, limit - total), self.offset,
      self.run)
    tracer:on_data_run(self.bytes + self.offset[0], n)
    lib.mr_data_plane_release_bytes(self.d, lib.MR_STREAM_NET, n, self.run[0])
    total = total + n
  until n == 0 or total >= limit
  return total
end

-- Hands what is queued to tracer, at most limit records of each queue
-- (default DRAIN_MAX); returns how many records.
function _M:drain(tracer, limit)
  limit = limit or DRAIN_MAX
  return drain_events(self, tracer, limit) + drain_data(self, tracer, limit)
end

-- Counters: per stream (received, dropped in the queue and in the kernel)
-- and the kernel side's (struct mr_net_counters, and `connections`: its
-- map's entries now), as Lua numbers.
function _M:stats()
  local ffi, lib = rt.ffi, rt.lib
  local out = {}
  for name, stream in pairs({ tcp = lib.MR_STREAM_TCP, net = lib.MR_STREAM_NET, process = lib.MR_STREAM_PROCESS }) do
    local s = ffi.new("struct mr_data_plane_stream_stats")
    lib.mr_data_plane_stream_stats(self.d, stream, s)
    out[name] = { received = tonumber(s.received), dropped_queue = tonumber(s.dropped_queue),
      dropped_kernel = tonumber(s.dropped_kernel), queued = tonumber(s.queued) }
  end
  local c = ffi.new("struct mr_net_counters")
  lib.mr_data_plane_net_counters(self.d, c)
  out.kernel = {}
  for _, k in ipairs({ "data_records", "lost_data", "lost_events", "truncated", "unreadable", "conns_full",
    "found_midstream", "targets_full", "closed_data", "skipped_records", "skipped_bytes" }) do
    out.kernel[k] = tonumber(c[k])
  end
  out.kernel.connections = tonumber(lib.mr_data_plane_net_conn_count(self.d))
  return out
end

function _M:close()
  if self.d then
    rt.lib.mr_data_plane_close(rt.ffi.gc(self.d, nil))
    self.d = nil
  end
end

return _M
