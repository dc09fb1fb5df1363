-- status.lua - what the Rover drop-in says about itself, so that a module
-- that does nothing is never silent and a module that fails is never noisy:
--
-- * how many processes the naming rules matched: once, then on each change
--   (a warning when none did, saying why nothing is reported);
-- * whether OAP answers: one warning when a call finds it unreachable, one
--   line when it answers again (with what failed meanwhile), and at most one
--   reminder per minute in between, with counts, however many heartbeats,
--   queries and flushes fail;
-- * calls OAP answers with an error: the first of each kind, then at most one
--   line per kind per minute, saying how many more there were.
--
-- Pure policy: time and the log are injected.
--
--   local s = status.new({ now = ms_fn, log = function(level, fmt, ...) end,
--     address = "oap:11800", on_reachability = function(reachable, since_ms) end })
--   s:scanned(#processes, "2 rules in process_discovery.scanner.regex")
--   s:answered("queryTasks")                       -- a call succeeded
--   s:failed("queryTasks", "UNAVAILABLE", "UNAVAILABLE: ...")  -- code nil: not sent
--
-- on_reachability(false, since_ms) when OAP turns out unreachable,
-- on_reachability(true) when it answers again. hand_over() / new({ state })
-- carry the state across a hot reload.
local oap_client = require("moonrover.rover.oap_client")

local _M = {}
local mt = { __index = _M }

_M.REMIND_MS = 60000

-- What happens after a failed call, by rpc.
local THEN = {
  reportProcesses = "processes are reported again at the next heartbeat",
  keepAlive = "processes are kept alive again at the next heartbeat",
  queryTasks = "tasks are asked for again at the next check",
  collectProfilingData = "the profiling data is kept for the next flush",
}

function _M.new(opts)
  local state = opts.state or {}
  return setmetatable({
    now = opts.now,
    log = opts.log,
    address = opts.address,
    remind_ms = opts.remind_ms or _M.REMIND_MS,
    on_reachability = opts.on_reachability or function() end,
    matched = state.matched,       -- processes matched at the last scan (nil: no scan yet)
    reachable = state.reachable,   -- nil until a call ends, then whether OAP answered
    down_since = state.down_since, -- when the first call found OAP unreachable
    reminded = state.reminded,     -- when the last line about it was written
    failures = state.failures or {}, -- rpc -> calls failed since down_since
    refused = {},                  -- rpc/code -> { logged = ms, more = n } of calls OAP refused
  }, mt)
end

function _M:hand_over()
  return { matched = self.matched, reachable = self.reachable, down_since = self.down_since,
    reminded = self.reminded, failures = self.failures }
end

-- "2m05s" for a span of milliseconds
local function span(ms)
  local s = math.floor(ms / 1000 + 0.5)
  if s < 60 then
    return string.format("%ds", s)
  elseif s < 3600 then
    return s % 60 == 0 and string.format("%dm", s / 60) or string.format("%dm%02ds", math.floor(s / 60), s % 60)
  end
  return string.format("%dh%02dm", math.floor(s / 3600), math.floor(s % 3600 / 60))
end

-- "37 calls (queryTasks 12, reportProcesses 25)"
local function counts(failures)
  local names, total = {}, 0
  for rpc, n in pairs(failures) do
    names[#names + 1] = string.format("%s %d", rpc, n)
    total = total + n
  end
  table.sort(names)
  return string.format("%d call%s (%s)", total, total == 1 and "" or "s", table.concat(names, ", "))
end

-- A scan matched n processes; naming says what names them (for the warning
-- when none matched).
function _M:scanned(n, naming)
  if n == self.matched then
    return
  end
  self.matched = n
  if n == 0 then
    self.log("warn", "process discovery: no process matches (%s), so nothing is reported to OAP", naming)
  else
    self.log("info", "process discovery: %d process%s match%s (%s)", n, n == 1 and "" or "es",
      n == 1 and "es" or "", naming)
  end
end

local function went_down(self, rpc, why, now)
  self.reachable, self.down_since, self.reminded = false, now, now
  self.failures = { [rpc] = 1 }
  self.log("warn", "OAP at %s is unreachable: %s failed: %s; %s, and calls are retried (a reminder follows at "
    .. "most every %s)", self.address, rpc, why, THEN[rpc] or "it is tried again", span(self.remind_ms))
  self.on_reachability(false, now)
end

local function still_down(self, rpc, why, now)
  self.failures[rpc] = (self.failures[rpc] or 0) + 1
  if now - self.reminded >= self.remind_ms then
    self.reminded = now
    self.log("warn", "OAP at %s is still unreachable, for %s now: %s failed since; the last: %s failed: %s",
      self.address, span(now - self.down_since), counts(self.failures), rpc, why)
  end
end

local function came_back(self, now)
  if self.reachable == false then
    self.log("info", "OAP at %s answers again, after %s; %s failed meanwhile", self.address,
      span(now - self.down_since), counts(self.failures))
    self.on_reachability(true)
  end
  self.reachable, self.down_since, self.reminded, self.failures = true, nil, nil, {}
end

-- A call OAP answered (successfully).
function _M:answered()
  came_back(self, self.now())
end

-- OAP answered with an error, or the call could not be made: the first of
-- each kind is logged, then one line per minute at most, with a count.
local function refused(self, rpc, code, why, now)
  local key = rpc .. "/" .. (code or "not sent")
  local r = self.refused[key]
  if r and now - r.logged < self.remind_ms then
    r.more = r.more + 1
    return
  end
  local more = r and r.more > 0 and string.format(" (and %d more time%s in the last %s)", r.more,
    r.more == 1 and "" or "s", span(now - r.logged)) or ""
  self.refused[key] = { logged = now, more = 0 }
  if code then
    self.log("warn", "OAP refused %s: %s; %s%s", rpc, why, THEN[rpc] or "it is tried again", more)
  else
    self.log("warn", "%s could not be sent to OAP: %s; %s%s", rpc, why, THEN[rpc] or "it is tried again", more)
  end
end

-- A call failed: code is the gRPC status name, or nil when it was not sent;
-- why says what failed.
function _M:failed(rpc, code, why)
  local now = self.now()
  if code and oap_client.UNREACHABLE[code] then
    if self.reachable == false then
      still_down(self, rpc, why, now)
    else
      went_down(self, rpc, why, now)
    end
    return
  end
  if code then
    came_back(self, now)
  end
  refused(self, rpc, code, why, now)
end

return _M
