-- Specs for the options of moonrover.profiles' start() (profile_options.lua):
-- defaults, and one clear line for each kind of mistake.
local C = require("moonrover.consts")
local options = require("moonrover.profiler.profile_options")

local function refused(opts)
  local o, err = options.check(opts)
  assert.is_nil(o)
  return err
end

describe("profile options", function()
  it("fills in the defaults and sorts the pids without repeats", function()
    local o = assert(options.check({ pids = { 30, 10, 30 } }))
    assert.same({ 10, 30 }, o.pids)
    assert.same(99, o.frequency)
    assert.is_false(o.off_cpu)
    assert.is_true(o.kernel)
    assert.is_nil(o.duration)
  end)

  it("keeps what is given, and no frequency for off-CPU profiles", function()
    local done = function() end
    local o = assert(options.check({ pids = { 7 }, duration = 2.5, frequency = 499, kernel = false, on_done = done }))
    assert.same({ 2.5, 499, false }, { o.duration, o.frequency, o.kernel })
    assert.same(done, o.on_done)
    assert.same(0, assert(options.check({ pids = { 7 }, off_cpu = true, frequency = 99 })).frequency)
  end)

  it("says which option is wrong and why", function()
    assert.same("start(opts): opts must be a table", refused(nil))
    assert.same("pids must be a non-empty list of process ids", refused({ pids = 7 }))
    assert.same("pids: -1 is not a process id", refused({ pids = { -1 } }))
    assert.same("pids: 1.5 is not a process id", refused({ pids = { 1.5 } }))
    local many = {}
    for i = 1, C.MR_PID_FILTER_MAX + 1 do
      many[i] = i
    end
    assert.same(#many .. " pids: a profile takes at most " .. C.MR_PID_FILTER_MAX, refused({ pids = many }))
    assert.matches("^unknown option 'freq' %(options: pids, duration", refused({ pids = { 1 }, freq = 9 }))
    assert.matches("^duration must be a number of seconds above 0", refused({ pids = { 1 }, duration = -1 }))
    assert.matches("^duration must be", refused({ pids = { 1 }, duration = 0 / 0 }))
    assert.matches("^duration must be", refused({ pids = { 1 }, duration = math.huge }))
    assert.same("frequency must be a whole number of Hz, at least 1, not 0", refused({ pids = { 1 }, frequency = 0 }))
    assert.same("off_cpu must be true or false, not yes", refused({ pids = { 1 }, off_cpu = "yes" }))
    assert.same("on_done must be a function, not string", refused({ pids = { 1 }, on_done = "print" }))
  end)
end)
