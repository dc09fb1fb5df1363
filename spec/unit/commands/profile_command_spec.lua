-- Specs for the pure parts of `moonrover profile`: format choice, job
-- building and the summary's statistics.
local output_format = require("moonrover.profiler.output_format")
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

describe("profile.job_from, options as people type them", function()
  local function job_of(argv)
    local values, _, given = assert(args.parse(profile.options, argv))
    return assert(profile.job_from(values, given))
  end

  it("reads -F99 -p<pid> -d1, durations with units, --opt=value and any case of a format", function()
    local job = job_of({ "-F99", "-p30397", "-d1", "-o", "x", "-f", "SVG" })
    assert.same({ 99, { 30397 }, 1e9, "svg" }, { job.frequency, job.pids, job.duration_ns, job.format })
    job = job_of({ "-d", "2m", "--format=Folded", "--output=-" })
    assert.same({ 120e9, "folded", "-" }, { job.duration_ns, job.format, job.output })
    assert.same(250e6, job_of({ "--duration=250ms" }).duration_ns)
  end)

  it("warns that -F does not apply to an off-CPU profile, and only then", function()
    assert.same({ "moonrover profile: --frequency does not apply to off-CPU profiles " ..
      "(they weigh blocked time, not samples): ignored" }, job_of({ "--off-cpu", "-F", "999" }).warnings)
    assert.same({}, job_of({ "--off-cpu" }).warnings)
    assert.same({}, job_of({ "-F", "999" }).warnings)
  end)

  it("asks for per-thread stacks with --per-thread only", function()
    assert.is_true(job_of({ "--per-thread" }).per_thread)
    assert.is_false(job_of({}).per_thread)
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

describe("output_format.pprof_main_file", function()
  it("keeps one process's executable, and names no binary for the whole system or several processes", function()
    assert.is_nil(output_format.pprof_main_file({ 4242 }))
    assert.same(output_format.WHOLE_SYSTEM_FILE, output_format.pprof_main_file(nil))
    assert.same(output_format.WHOLE_SYSTEM_FILE, output_format.pprof_main_file({ 100, 200 }))
  end)
end)
