-- Specs for the pure parts of `moonrover profile`: format choice, job
-- building and the summary's statistics.
local profile = require("moonrover.commands.profile_command")
local args = require("moonrover.lib.args")

describe("profile.format_for", function()
  it("follows the output file's extension", function()
    assert.same("svg", profile.format_for("out/flame.SVG"))
    assert.same("pprof", profile.format_for("cpu.pb.gz"))
    assert.same("pprof", profile.format_for("cpu.pprof"))
    assert.same("folded", profile.format_for("stacks.folded"))
    assert.same("folded", profile.format_for("-"))
  end)

  it("lets --format win and explains an unknown extension", function()
    assert.same("pprof", profile.format_for("x.svg", "pprof"))
    local f, err = profile.format_for("profile.dat")
    assert.is_nil(f)
    assert.matches("use %-%-format", err)
  end)
end)

describe("profile.job_from", function()
  it("turns parsed options into a job with the documented defaults", function()
    local values = assert(args.parse(profile.options, {}))
    local job = assert(profile.job_from(values))
    assert.same(10e9, job.duration_ns)
    assert.same(99, job.frequency)
    assert.is_false(job.off_cpu)
    assert.is_true(job.kernel)
    assert.same("svg", job.format)
    assert.same("profile.svg", job.output)
    assert.is_nil(job.pids)
  end)

  it("honours --off-cpu, --no-kernel, --pid and --format", function()
    local values = assert(args.parse(profile.options,
      { "--off-cpu", "--no-kernel", "-p", "7,8", "-o", "x.out", "-f", "folded" }))
    local job = assert(profile.job_from(values))
    assert.is_true(job.off_cpu)
    assert.is_false(job.kernel)
    assert.same({ 7, 8 }, job.pids)
    assert.same("folded", job.format)
  end)
end)

describe("profile.summary_stats", function()
  it("names every loss reason and the time to the first sample", function()
    local s = profile.summary_stats({ samples = 100, idle_samples = 5, lost_user_stack = 0,
      lost_stack_full = 3, lost_counts_full = 0, lost_offcpu_start = 0, lost_notify = 1,
      processes = 4, stacks = 20, first_sample_ns = 1500000, start_ns = 1000000 },
      { output = "p.svg", launch_ns = 500000 }, 2e9)
    assert.same(100, s.samples)
    assert.same(4, s.processes)
    assert.same(2, s.duration)
    assert.same(1, s.first_sample_ms)
    local by_reason = {}
    for _, l in ipairs(s.lost) do
      by_reason[l.reason] = l.n
    end
    assert.same(3, by_reason["stack storage full"])
    assert.same(1, by_reason["process notices dropped (names may be missing)"])
  end)
end)
