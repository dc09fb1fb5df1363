-- trace_losses.lua - what `moonrover trace`'s summary says besides the
-- exchanges: what was lost, by reason (from the source's stats(), the
-- tracer's stats() and the processes followed), and the notes, facts that
-- are no loss (processes followed, moonrover's own connections left out,
-- connections expired, body bytes the kernel was told not to copy, the
-- connections followed at the end by the kernel and by the tracer). A note
-- is made only when its figure is not 0. Pure: the figures are given.
local _M = {}

-- s: the source's stats(), t: the tracer's, targets: the processes followed
-- (trace_targets, or nil). A list of { reason, n }, zeros included (the
-- summary leaves them out).
function _M.drops(s, t, targets)
  local k = s.kernel
  local list = {
    { reason = "kernel ring full (data)", n = k.lost_data },
    { reason = "kernel ring full (connections)", n = k.lost_events },
    { reason = "queue full (data)", n = s.net.dropped_queue },
    { reason = "queue full (connections)", n = s.tcp.dropped_queue },
    { reason = "still queued at the end (data)", n = s.net.queued },
    { reason = "still queued at the end (connections)", n = s.tcp.queued },
    { reason = "connection map full", n = k.conns_full },
    { reason = "bytes unreadable", n = k.unreadable },
    { reason = "reads and writes of sockets already closed", n = k.closed_data },
    { reason = "gaps in a connection's bytes", n = t.gaps },
    { reason = "connections evicted", n = t.evicted },
    { reason = "connections only counted (memory budget)", n = t.shed },
  }
  if targets then
    list[#list + 1] = { reason = "process events (children may be missed)",
      n = s.process.dropped_queue + s.process.dropped_kernel }
    list[#list + 1] = { reason = "processes not followed (traced processes' map full)",
      n = targets.not_followed + k.targets_full }
  end
  return list
end

-- The notes (lines without their indent), of the same figures.
function _M.notes(s, t, targets)
  local list, k = {}, s.kernel
  local function note(n, text, ...)
    if n > 0 then
      list[#list + 1] = string.format(text, n, ...)
    end
  end
  note(targets and targets.total or 0, "%d process(es) followed")
  note(t.hidden, "%d connection(s) of moonrover itself not shown")
  note(t.expired, "%d connection(s) expired (idle, and no longer followed by the kernel)")
  note(k.skipped_records, "%d read(s) and write(s) inside bodies not recorded, %d body byte(s) not copied",
    k.skipped_bytes)
  if k.skipped_records == 0 then
    note(k.skipped_bytes, "%d body byte(s) not copied")
  end
  note(k.connections, "at the end, the kernel followed %d connection(s), the tracer %d", t.connections)
  return list
end

return _M
