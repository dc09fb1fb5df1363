-- Specs for the option parser and help text.
local args = require("moonrover.lib.args")

local OPTIONS = {
  { name = "pid", short = "p", arg = "PID[,PID...]", convert = args.pid_list, help = "pids" },
  { name = "duration", short = "d", arg = "SECONDS", default = 10, convert = args.duration,
    help = "how long" },
  { name = "off-cpu", help = "blocked time" },
  { name = "format", arg = "FORMAT", convert = args.one_of({ "folded", "svg" }), help = "format" },
}

describe("args.parse", function()
  it("fills defaults when options are absent", function()
    local v, pos = args.parse(OPTIONS, {})
    assert.same(10, v.duration)
    assert.is_nil(v.pid)
    assert.is_nil(v["off-cpu"])
    assert.same({}, pos)
  end)

  it("reads long, long=, short forms and flags", function()
    local v, pos = args.parse(OPTIONS, { "--duration=2.5", "-p", "1,22", "--off-cpu", "extra" })
    assert.same(2.5, v.duration)
    assert.same({ 1, 22 }, v.pid)
    assert.is_true(v["off-cpu"])
    assert.same({ "extra" }, pos)
  end)

  it("rejects unknown options, missing values and bad values with one line", function()
    local v, err = args.parse(OPTIONS, { "--bogus" })
    assert.is_nil(v)
    assert.same("unknown option --bogus", err)
    v, err = args.parse(OPTIONS, { "--duration" })
    assert.is_nil(v)
    assert.matches("needs a value", err)
    v, err = args.parse(OPTIONS, { "-d", "-3" })
    assert.is_nil(v)
    assert.matches("is not a duration", err)
    v, err = args.parse(OPTIONS, { "--pid", "12,abc" })
    assert.is_nil(v)
    assert.matches("'abc' is not a process id", err)
    v, err = args.parse(OPTIONS, { "--format", "png" })
    assert.is_nil(v)
    assert.matches("not one of folded, svg", err)
  end)
end)

describe("args.parse, the forms people type", function()
  local FORMS = {
    { name = "frequency", short = "F", arg = "HZ", default = 99, convert = args.int_range(1, 10000), help = "hz" },
    { name = "pid", short = "p", arg = "PID", convert = args.pid_list, help = "pids" },
    { name = "duration", short = "d", arg = "DURATION", default = 10, convert = args.duration, help = "how long" },
    { name = "format", short = "f", arg = "FORMAT", convert = args.one_of({ "folded", "svg" }), help = "format" },
    { name = "off-cpu", help = "blocked time" },
  }

  it("takes a short option's value attached, as perf does", function()
    local v = assert(args.parse(FORMS, { "-F99", "-p30397", "-d1" }))
    assert.same(99, v.frequency)
    assert.same({ 30397 }, v.pid)
    assert.same(1, v.duration)
  end)

  it("reads durations with units, apart, attached or after '='", function()
    assert.same(5, assert(args.parse(FORMS, { "-d", "5s" })).duration)
    assert.same(120, assert(args.parse(FORMS, { "-d", "2m" })).duration)
    assert.same(0.25, assert(args.parse(FORMS, { "-d250ms" })).duration)
    assert.same(90, assert(args.parse(FORMS, { "--duration=1.5m" })).duration)
  end)

  it("reads --opt=value for every option that takes a value", function()
    local v = assert(args.parse(FORMS, { "--frequency=999", "--pid=7", "--duration=3", "--format=svg" }))
    assert.same({ 999, { 7 }, 3, "svg" }, { v.frequency, v.pid, v.duration, v.format })
  end)

  it("refuses a duration that is not one, or is zero, naming the text", function()
    local v, err = args.parse(FORMS, { "-d", "5x" })
    assert.is_nil(v)
    assert.same("invalid value for --duration: '5x' has an unknown unit 'x' (us, ms, s, m, h)", err)
    v, err = args.parse(FORMS, { "-d0" })
    assert.is_nil(v)
    assert.same("invalid value for --duration: '0' is not a duration above zero", err)
  end)

  it("refuses a value given to a flag, in either form", function()
    local v, err = args.parse(FORMS, { "--off-cpu=yes" })
    assert.is_nil(v)
    assert.same("option --off-cpu takes no value (given 'yes')", err)
    local short = { { name = "x", short = "x", help = "a flag" } }
    v, err = args.parse(short, { "-xy" })
    assert.is_nil(v)
    assert.same("option --x takes no value (given 'y')", err)
  end)

  it("takes a word that is not an option, such as a negative number, as positional", function()
    local v, pos = args.parse(FORMS, { "-3" })
    assert.truthy(v)
    assert.same({ "-3" }, pos)
  end)

  it("takes every word after '--' as positional, even one that looks like an option", function()
    local v, pos = args.parse(FORMS, { "-F", "49", "--", "--off-cpu", "-d1" })
    assert.same(49, v.frequency)
    assert.is_nil(v["off-cpu"])
    assert.same({ "--off-cpu", "-d1" }, pos)
  end)
end)

describe("args.wants_help", function()
  local FORMS = {
    { name = "output", short = "o", arg = "FILE", help = "where" },
    { name = "off-cpu", help = "blocked time" },
  }

  it("sees -h and --help where an option is expected", function()
    assert.is_true(args.wants_help(FORMS, { "-h" }))
    assert.is_true(args.wants_help(FORMS, { "--off-cpu", "--help" }))
    assert.is_true(args.wants_help(FORMS, { "-o", "x", "-h" }))
  end)

  it("takes -h as the value of an option that needs one, and leaves words after '--' alone", function()
    assert.is_false(args.wants_help(FORMS, { "-o", "-h" }))
    assert.is_false(args.wants_help(FORMS, { "--output", "--help" }))
    assert.is_false(args.wants_help(FORMS, { "--", "-h" }))
    local v = assert(args.parse(FORMS, { "-o", "-h" }))
    assert.same("-h", v.output)
  end)
end)

describe("args.one_of", function()
  it("ignores letter case and gives the choice as listed", function()
    local conv = args.one_of({ "folded", "pprof", "svg" })
    assert.same("svg", conv("SVG"))
    assert.same("folded", conv("Folded"))
    assert.same("pprof", conv("pprof"))
    local v, err = conv("PNG")
    assert.is_nil(v)
    assert.same("'PNG' is not one of folded, pprof, svg", err)
  end)
end)

describe("args.int_range", function()
  it("accepts whole numbers in range only", function()
    local conv = args.int_range(1, 100)
    assert.same(99, conv("99"))
    assert.is_nil(conv("0"))
    assert.is_nil(conv("1.5"))
    assert.is_nil(conv("101"))
  end)
end)

describe("args.help", function()
  it("lists every option with its argument and default", function()
    local text = args.help("tool [opts]", "Does things.", OPTIONS)
    assert.matches("usage: tool %[opts%]", text)
    assert.matches("%-p, %-%-pid PID%[,PID...%]", text)
    assert.matches("how long %(default: 10%)", text)
    assert.matches("%-%-off%-cpu", text)
  end)
end)
