-- Specs for the option parser and help text.
local args = require("moonrover.lib.args")

local OPTIONS = {
  { name = "pid", short = "p", arg = "PID[,PID...]", convert = args.pid_list, help = "pids" },
  { name = "duration", short = "d", arg = "SECONDS", default = 10, convert = args.positive_number,
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
    assert.matches("not a positive number", err)
    v, err = args.parse(OPTIONS, { "--pid", "12,abc" })
    assert.is_nil(v)
    assert.matches("'abc' is not a process id", err)
    v, err = args.parse(OPTIONS, { "--format", "png" })
    assert.is_nil(v)
    assert.matches("not one of folded, svg", err)
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
