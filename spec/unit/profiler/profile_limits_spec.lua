-- Specs for what moonrover.profiles lets run at once (profile_limits.lua)
-- and how it tells a file's format (output_format.lua).
local limits = require("moonrover.profiler.profile_limits")
local output_format = require("moonrover.profiler.output_format")

local function on_cpu(frequency)
  return { frequency = frequency, off_cpu = false, kernel = true }
end

describe("profile limits", function()
  local l = assert(limits.apply(limits.DEFAULTS, { max_profiles = 2, max_frequency = 500,
    max_total_frequency = 600 }))

  it("lets a profile run while every limit holds", function()
    assert.is_true(limits.check(l, { profiles = 1, total_frequency = 100 }, on_cpu(499)))
  end)

  it("refuses one profile too many, whatever its kind", function()
    local ok, err = limits.check(l, { profiles = 2, total_frequency = 0 }, { off_cpu = true })
    assert.is_nil(ok)
    assert.same("too many profiles: 2 running (limit max_profiles = 2)", err)
  end)

  it("refuses a frequency above max_frequency", function()
    local ok, err = limits.check(l, { profiles = 0, total_frequency = 0 }, on_cpu(501))
    assert.is_nil(ok)
    assert.same("frequency 501 Hz is above the limit (max_frequency = 500 Hz)", err)
  end)

  it("counts a new profiler against max_total_frequency, a shared one not", function()
    local ok, err = limits.check(l, { profiles = 1, total_frequency = 499 }, on_cpu(200))
    assert.is_nil(ok)
    assert.matches("take the profilers to 699 Hz per CPU %(limit max_total_frequency = 600 Hz%)", err)
    assert.is_true(limits.check(l, { profiles = 1, total_frequency = 499, shared = true }, on_cpu(499)))
  end)

  it("puts no frequency limit on off-CPU profiles", function()
    assert.is_true(limits.check(l, { profiles = 0, total_frequency = 600 }, { off_cpu = true, frequency = 0 }))
  end)

  it("changes only what it is given, and refuses unknown or bad limits whole", function()
    local changed = assert(limits.apply(l, { max_profiles = 5 }))
    assert.same({ max_profiles = 5, max_frequency = 500, max_total_frequency = 600 }, changed)
    assert.same(2, l.max_profiles)
    local none, err = limits.apply(l, { max_profiles = 3, max_rate = 1 })
    assert.is_nil(none)
    assert.matches("unknown limit 'max_rate'", err)
    none, err = limits.apply(l, { max_frequency = 1.5 })
    assert.is_nil(none)
    assert.same("limit max_frequency must be a whole number >= 0, not 1.5", err)
  end)
end)

describe("profile output formats", function()
  it("follows the extension, and a named format wins", function()
    assert.same("pprof", output_format.for_path("/tmp/x-1-2.pb.gz"))
    assert.same("svg", output_format.for_path("a.SVG"))
    assert.same("folded", output_format.for_path("a.txt"))
    assert.same("svg", output_format.for_path("a.pb.gz", "svg"))
    assert.same("pprof", output_format.for_path("a.svg", "PProf"))
  end)

  it("says why when it cannot tell", function()
    local f, err = output_format.for_path("profile.dat")
    assert.is_nil(f)
    assert.same("cannot tell the format from the file name 'profile.dat'", err)
    f, err = output_format.for_path("a.svg", "png")
    assert.is_nil(f)
    assert.same("unknown profile format 'png' (formats: folded, pprof, svg)", err)
  end)
end)
