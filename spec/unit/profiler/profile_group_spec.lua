-- Specs for one profiler shared by several profiles (profile_group.lua),
-- on a recording stand-in for the profiler object: which pids it samples as
-- profiles join and leave, when it drains, stops and closes.
local fake = { opened = {} }

-- A profiler that records what is done to it.
local function new_fake(opts)
  local p = { opts = opts, targets = {}, calls = {}, deferred = 0 }
  for _, pid in ipairs(opts.pids) do
    p.targets[pid] = true
  end
  function p.start() return true end
  function p.poll() return 0 end
  function p.drain(self, into)
    self.calls[#self.calls + 1] = "drain"
    into.drained = true
    return true
  end
  function p.stop(self) self.calls[#self.calls + 1] = "stop" end
  function p.close(self) self.calls[#self.calls + 1] = "close" end
  function p.target(self, pid, add)
    self.calls[#self.calls + 1] = (add and "+" or "-") .. pid
    self.targets[pid] = add or nil
    return true
  end
  function p.stats(self) return { deferred = self.deferred } end
  return p
end

package.loaded["moonrover.profiler.profiler"] = {
  open = function(opts)
    local p = new_fake(opts)
    fake.opened[#fake.opened + 1] = p
    return p
  end,
  new_profile = function() return {} end,
}
package.loaded["moonrover.profiler.profile_group"] = nil
local profile_group = require("moonrover.profiler.profile_group")
package.loaded["moonrover.profiler.profile_group"] = nil
package.loaded["moonrover.profiler.profiler"] = nil

local function member(pids)
  local m = { pids = pids, took = 0 }
  function m.take(self, scratch)
    assert(scratch.drained, "a member gets only drained profiles")
    self.took = self.took + 1
    return true
  end
  return m
end

local OPTS = { frequency = 99, off_cpu = false, kernel = true }

local function sorted_targets(p)
  local out = {}
  for pid in pairs(p.targets) do
    out[#out + 1] = pid
  end
  table.sort(out)
  return out
end

describe("profile group", function()
  it("samples the union of its members' pids, each kept while a member wants it", function()
    local a, b = member({ 1, 2 }), member({ 2, 3 })
    local g = assert(profile_group.open(OPTS, a))
    local p = fake.opened[#fake.opened]
    assert(g:join(b))
    assert.same({ 1, 2, 3 }, sorted_targets(p))
    assert(g:leave(a))
    assert.same({ 2, 3 }, sorted_targets(p))
    assert.is_false(g:empty())
  end)

  it("hands each drain to every member, and a joining one only what follows", function()
    local a, b = member({ 1 }), member({ 2 })
    local g = assert(profile_group.open(OPTS, a))
    assert(g:join(b))
    assert.same(1, a.took)
    assert.same(0, b.took)
    assert(g:drain())
    assert.same({ 2, 1 }, { a.took, b.took })
  end)

  it("stops the profiler before the last member's drain, then closes it", function()
    local a = member({ 5 })
    local g = assert(profile_group.open(OPTS, a))
    local p = fake.opened[#fake.opened]
    assert(g:leave(a))
    assert.same({ "stop", "drain", "close" }, p.calls)
    assert.is_true(g:empty())
  end)

  it("drains again for a leaving member while stacks are put off", function()
    local a, b = member({ 1 }), member({ 2 })
    local g = assert(profile_group.open(OPTS, a))
    local p = fake.opened[#fake.opened]
    assert(g:join(b))
    local drains = 0
    p.drain = function(_, into)
      drains = drains + 1
      p.deferred = math.min(drains, 3)
      into.drained = true
      return true
    end
    assert(g:leave(a))
    assert.same(4, drains)
  end)

  it("shares by kind of sampling", function()
    assert.same("on-cpu@99+kernel", profile_group.key(OPTS))
    assert.same("off-cpu", profile_group.key({ off_cpu = true, kernel = false }))
  end)
end)
