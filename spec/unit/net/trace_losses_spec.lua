-- trace_losses_spec.lua - what trace's summary says was lost and noted:
-- every counter of the source, the tracer and the processes followed under
-- its reason, and a note only for a figure that is not 0.
local trace_losses = require("moonrover.net.trace_losses")

local KERNEL = { "lost_data", "lost_events", "conns_full", "unreadable", "closed_data", "targets_full",
  "skipped_records", "skipped_bytes", "connections" }

-- Stats of a source and a tracer with every figure 0, but those of over.
local function figures(over)
  local s = { kernel = {}, net = { dropped_queue = 0, queued = 0 }, tcp = { dropped_queue = 0, queued = 0 },
    process = { dropped_queue = 0, dropped_kernel = 0 } }
  for _, k in ipairs(KERNEL) do
    s.kernel[k] = 0
  end
  local t = { gaps = 0, evicted = 0, shed = 0, expired = 0, hidden = 0, connections = 0 }
  for k, v in pairs(over or {}) do
    if s.kernel[k] then
      s.kernel[k] = v
    else
      t[k] = v
    end
  end
  return s, t
end

local function drop(list, reason)
  for _, d in ipairs(list) do
    if d.reason == reason then
      return d.n
    end
  end
end

describe("trace losses", function()
  it("names each loss, the tracer's shedding and the kernel's closed sockets among them", function()
    local s, t = figures({ shed = 7, closed_data = 3, gaps = 2, lost_data = 5 })
    local list = trace_losses.drops(s, t)
    assert.equal(7, drop(list, "connections only counted (memory budget)"))
    assert.equal(3, drop(list, "reads and writes of sockets already closed"))
    assert.equal(2, drop(list, "gaps in a connection's bytes"))
    assert.equal(5, drop(list, "kernel ring full (data)"))
    assert.is_nil(drop(list, "process events (children may be missed)"))
  end)

  it("adds the processes' losses when processes are followed", function()
    local s, t = figures({ targets_full = 1 })
    s.process.dropped_kernel = 4
    local list = trace_losses.drops(s, t, { total = 2, not_followed = 2 })
    assert.equal(4, drop(list, "process events (children may be missed)"))
    assert.equal(3, drop(list, "processes not followed (traced processes' map full)"))
  end)

  it("notes nothing when every figure is 0", function()
    assert.same({}, trace_losses.notes(figures()))
  end)

  it("notes expired connections, skipped bodies and the connections followed at the end", function()
    local s, t = figures({ expired = 4, skipped_records = 12, skipped_bytes = 900000, connections = 9,
      hidden = 1 })
    t.connections = 8
    assert.same({
      "1 connection(s) of moonrover itself not shown",
      "4 connection(s) expired (idle, and no longer followed by the kernel)",
      "12 read(s) and write(s) inside bodies not recorded, 900000 body byte(s) not copied",
      "at the end, the kernel followed 9 connection(s), the tracer 8",
    }, trace_losses.notes(s, t))
  end)

  it("notes body bytes not copied within recorded reads alone, and the processes followed", function()
    local s, t = figures({ skipped_bytes = 5000 })
    assert.same({ "3 process(es) followed", "5000 body byte(s) not copied" },
      trace_losses.notes(s, t, { total = 3, not_followed = 0 }))
  end)
end)
