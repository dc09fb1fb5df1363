-- Specs for moonrover.rt's guard: another C library (here libyaml, declared by
-- moonrover.lib.yaml) as Lua code in an agent script's state may call it.
local rt = require("moonrover.rt")
require("moonrover.lib.yaml")

local ffi = rt.ffi
local libyaml = ffi.load("libyaml-0.so.2")

describe("rt.guard", function()
  after_each(function()
    package.loaded["moonrover.script_context"] = nil
  end)

  it("leaves a library as it is outside a script's state", function()
    assert.equal(libyaml, rt.guard(libyaml))
  end)

  it("in a script's state, wraps each function once and passes results through", function()
    package.loaded["moonrover.script_context"] = { name = "spec" }
    local guarded = rt.guard(libyaml)
    assert.are_not.equal(libyaml, guarded)
    assert.equal(guarded.yaml_parser_initialize, guarded.yaml_parser_initialize)
    local parser = ffi.new("yaml_parser_t")
    assert.equal(1, guarded.yaml_parser_initialize(parser))
    guarded.yaml_parser_delete(parser)
  end)

  it("in a script's state, raises a call's error at the caller", function()
    package.loaded["moonrover.script_context"] = { name = "spec" }
    local guarded = rt.guard(libyaml)
    assert.has_error(function() guarded.yaml_parser_initialize("not a parser") end)
  end)
end)

describe("rt.lib in a script's state", function()
  after_each(function()
    package.loaded["moonrover.script_context"] = nil
    package.loaded["moonrover.rt"] = nil
  end)

  it("looks each constant up once", function()
    package.loaded["moonrover.rt"] = nil
    package.loaded["moonrover.script_context"] = { name = "spec" }
    local lib = require("moonrover.rt").lib
    assert.is_nil(rawget(lib, "MR_STREAM_TCP"))
    local tcp = lib.MR_STREAM_TCP
    assert.equal(tcp, rawget(lib, "MR_STREAM_TCP"))
  end)
end)

describe("lib.clock", function()
  local clock = require("moonrover.lib.clock")

  it("reads the runtime's monotonic clock in nanoseconds and seconds, never going back", function()
    local ns1 = clock.monotonic_ns()
    local s = clock.monotonic_s()
    local ns2 = clock.monotonic_ns()
    assert.is_number(ns1)
    assert.is_true(ns1 <= s * 1e9 + 1e3 and s * 1e9 <= ns2 + 1e3)
    assert.is_true(ns2 >= ns1)
  end)
end)
