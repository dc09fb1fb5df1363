-- Specs for what the Rover drop-in says about itself (rover/status.lua): the
-- processes its rules matched, once and on change; OAP going away and coming
-- back, one line each and a reminder at most every minute however many
-- calls fail; OAP's errors, rate-limited by kind.
local status = require("moonrover.rover.status")

local UNAVAILABLE = "UNAVAILABLE: failed to connect to all addresses"

describe("the Rover drop-in's status", function()
  local now, lines, changes, s

  local function log(level, fmt, ...)
    lines[#lines + 1] = level .. " " .. string.format(fmt, ...)
  end

  local function new(state)
    return status.new({ now = function() return now end, log = log, address = "oap:11800", state = state,
      on_reachability = function(reachable, since) changes[#changes + 1] = { reachable, since } end })
  end

  before_each(function()
    now, lines, changes = 1000000, {}, {}
    s = new()
  end)

  it("says how many processes matched once, then only when the number changes", function()
    s:scanned(2, "1 rule")
    s:scanned(2, "1 rule")
    s:scanned(1, "1 rule")
    s:scanned(0, "no rules")
    s:scanned(0, "no rules")
    assert.same({
      "info process discovery: 2 processes match (1 rule)",
      "info process discovery: 1 process matches (1 rule)",
      "warn process discovery: no process matches (no rules), so nothing is reported to OAP",
    }, lines)
  end)

  it("warns about a silent start: no process matched", function()
    s:scanned(0, "0 rules in process_discovery.scanner.regex")
    assert.same({ "warn process discovery: no process matches (0 rules in process_discovery.scanner.regex), so "
      .. "nothing is reported to OAP" }, lines)
  end)

  it("writes one line when OAP goes away, whatever fails after, and one when it is back", function()
    s:answered("queryTasks")
    for _ = 1, 5 do
      now = now + 1000
      s:failed("reportProcesses", "UNAVAILABLE", UNAVAILABLE)
      s:failed("queryTasks", "DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED: Deadline Exceeded")
      s:failed("collectProfilingData", "UNAVAILABLE", UNAVAILABLE)
    end
    assert.is_false(s.reachable)
    now = now + 40000
    s:answered("keepAlive")
    assert.same({
      "warn OAP at oap:11800 is unreachable: reportProcesses failed: " .. UNAVAILABLE .. "; processes are reported "
        .. "again at the next heartbeat, and calls are retried (a reminder follows at most every 1m)",
      "info OAP at oap:11800 answers again, after 44s; 15 calls (collectProfilingData 5, queryTasks 5, "
        .. "reportProcesses 5) failed meanwhile",
    }, lines)
    assert.same({ { false, 1001000 }, { true } }, changes)
    assert.is_true(s.reachable)
  end)

  it("reminds at most once a minute while OAP stays away, with counts", function()
    s:failed("queryTasks", "UNAVAILABLE", UNAVAILABLE)
    for _ = 1, 150 do
      now = now + 1000
      s:failed("queryTasks", "UNAVAILABLE", UNAVAILABLE)
    end
    assert.equal(3, #lines)
    assert.same("warn OAP at oap:11800 is still unreachable, for 1m now: 61 calls (queryTasks 61) failed since; the "
      .. "last: queryTasks failed: " .. UNAVAILABLE, lines[2])
    assert.matches("still unreachable, for 2m now: 121 calls %(queryTasks 121%) failed since", lines[3])
    assert.same({ { false, 1000000 } }, changes)
  end)

  it("counts OAP as reachable when it answers with an error, and rate-limits those errors by kind", function()
    s:failed("queryTasks", "UNAVAILABLE", UNAVAILABLE)
    now = now + 1000
    s:failed("reportProcesses", "PERMISSION_DENIED", "PERMISSION_DENIED: bad token")
    for _ = 1, 10 do
      now = now + 1000
      s:failed("reportProcesses", "PERMISSION_DENIED", "PERMISSION_DENIED: bad token")
    end
    s:failed("keepAlive", nil, "cannot call /skywalking.v3.EBPFProcessService/keepAlive: over the queue's byte budget")
    now = now + 60000
    s:failed("reportProcesses", "PERMISSION_DENIED", "PERMISSION_DENIED: bad token")
    assert.same({
      "warn OAP at oap:11800 is unreachable: queryTasks failed: " .. UNAVAILABLE .. "; tasks are asked for again at "
        .. "the next check, and calls are retried (a reminder follows at most every 1m)",
      "info OAP at oap:11800 answers again, after 1s; 1 call (queryTasks 1) failed meanwhile",
      "warn OAP refused reportProcesses: PERMISSION_DENIED: bad token; processes are reported again at the next "
        .. "heartbeat",
      "warn keepAlive could not be sent to OAP: cannot call /skywalking.v3.EBPFProcessService/keepAlive: over the "
        .. "queue's byte budget; processes are kept alive again at the next heartbeat",
      "warn OAP refused reportProcesses: PERMISSION_DENIED: bad token; processes are reported again at the next "
        .. "heartbeat (and 10 more times in the last 1m10s)",
    }, lines)
  end)

  it("keeps its state across a hot reload: no second warning, the outage's start kept", function()
    s:scanned(1, "1 rule")
    s:failed("queryTasks", "UNAVAILABLE", UNAVAILABLE)
    local next_version = new(s:hand_over())
    now = now + 5000
    next_version:scanned(1, "1 rule")
    next_version:failed("queryTasks", "UNAVAILABLE", UNAVAILABLE)
    now = now + 5000
    next_version:answered("queryTasks")
    assert.equal(3, #lines)
    assert.same("info OAP at oap:11800 answers again, after 10s; 2 calls (queryTasks 2) failed meanwhile", lines[3])
  end)
end)
