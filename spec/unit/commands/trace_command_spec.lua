-- trace_command_spec.lua - the command line of `moonrover trace`: -f and
-- its case-insensitive values, durations with units for -d and
-- --min-duration, the filters' options and their defaults, --comm cut as the
-- kernel cuts names, --protocol in any case.
local args = require("moonrover.lib.args")
local protocol_list = require("moonrover.net.protocol_list")
local trace = require("moonrover.commands.trace_command")

local function parse(words)
  return args.parse(trace.options, words)
end

describe("trace's options", function()
  it("has the documented defaults: text, standard output, every process, no filter", function()
    local values = assert(parse({}))
    assert.same({ "text", "-", 32768, 8388608 }, { values.format, values.output, values.payload,
      values["queue-bytes"] })
    assert.is_nil(values.pid or values.comm or values.port or values.status or values["min-duration"] or
      values.path or values.duration)
  end)

  it("takes -f for --format, its value in any case", function()
    assert.equal("json", assert(parse({ "-f", "json" })).format)
    assert.equal("json", assert(parse({ "-f", "JSON" })).format)
    assert.equal("text", assert(parse({ "--format", "Text" })).format)
    local values, err = parse({ "-f", "xml" })
    assert.is_nil(values)
    assert.matches("'xml' is not one of text, json", err)
  end)

  it("reads -d and --min-duration with units, refusing a zero or unknown duration", function()
    local values = assert(parse({ "-d", "5s", "--min-duration", "250ms" }))
    assert.same({ 5, 250e6 }, { values.duration, values["min-duration"] })
    assert.equal(120, assert(parse({ "-d", "2m" })).duration)
    assert.equal(10, assert(parse({ "-d", "10" })).duration)
    assert.matches("not a duration above zero", select(2, parse({ "-d", "0" })))
    assert.matches("unknown unit", select(2, parse({ "--min-duration", "5y" })))
  end)

  it("reads the filters", function()
    local values = assert(parse({ "--port", "8080", "--status", "5xx", "--path", "/api", "--comm", "nginx" }))
    assert.same({ 8080, "/api", "nginx" }, { values.port, values.path, values.comm })
    assert.is_true(values.status(503))
    assert.is_false(values.status(200))
  end)

  it("cuts a --comm name to the 15 bytes the kernel keeps of a process's name", function()
    assert.equal("php-fpm: pool w", assert(parse({ "--comm", "php-fpm: pool www" })).comm)
    assert.equal("nginx", assert(parse({ "--comm", "nginx" })).comm)
  end)

  it("takes --protocol names in any case", function()
    local http1 = require("moonrover.net.protocols.http1")
    assert.same({ http1 }, assert(protocol_list.modules({ "HTTP" })))
    assert.matches("unknown protocol 'gopher'", select(2, protocol_list.modules({ "gopher" })))
  end)
end)
