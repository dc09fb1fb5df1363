-- yaml_abi_spec.lua - moonrover.lib.yaml declares libyaml's structs for the
-- FFI by hand: they must match yaml.h, checked against a program compiled
-- with the system's header.
local ffi = require("ffi")
local files = require("support.files")
local shell = require("support.shell")
require("moonrover.lib.yaml")

describe("yaml's libyaml declarations", function()
  local function at(ctype, field)
    return function() return ffi.offsetof(ctype, field) end
  end

  local function in_data(member, field)
    return function()
      local data = ffi.new("yaml_event_t").data
      return ffi.offsetof("yaml_event_t", "data") + ffi.offsetof(ffi.typeof(data[member]), field)
    end
  end

  -- an expression in C over yaml.h, and the same from the FFI declarations
  local FIELDS = {
    { "sizeof(yaml_parser_t)", function() return ffi.sizeof("yaml_parser_t") end },
    { "offsetof(yaml_parser_t, problem_offset)", at("yaml_parser_t", "problem_offset") },
    { "offsetof(yaml_parser_t, problem_value)", at("yaml_parser_t", "problem_value") },
    { "offsetof(yaml_parser_t, problem_mark)", at("yaml_parser_t", "problem_mark") },
    { "offsetof(yaml_parser_t, context)", at("yaml_parser_t", "context") },
    { "offsetof(yaml_parser_t, context_mark)", at("yaml_parser_t", "context_mark") },
    { "offsetof(yaml_parser_t, mark)", at("yaml_parser_t", "mark") },
    { "offsetof(yaml_parser_t, tokens_parsed)", at("yaml_parser_t", "tokens_parsed") },
    { "offsetof(yaml_parser_t, state)", at("yaml_parser_t", "state") },
    { "offsetof(yaml_parser_t, document)", at("yaml_parser_t", "document") },
    { "sizeof(yaml_event_t)", function() return ffi.sizeof("yaml_event_t") end },
    { "offsetof(yaml_event_t, data.scalar.value)", in_data("scalar", "value") },
    { "offsetof(yaml_event_t, data.scalar.length)", in_data("scalar", "length") },
    { "offsetof(yaml_event_t, data.scalar.style)", in_data("scalar", "style") },
    { "offsetof(yaml_event_t, data.sequence_start.tag)", in_data("collection_start", "tag") },
    { "offsetof(yaml_event_t, data.mapping_start.tag)", in_data("collection_start", "tag") },
    { "offsetof(yaml_event_t, start_mark)", at("yaml_event_t", "start_mark") },
  }

  -- the values of the C expressions, from a program built against yaml.h
  local function c_values()
    local dir = os.tmpname()
    os.remove(dir)
    shell.must("mkdir " .. dir)
    local lines = { "#include <stddef.h>", "#include <stdio.h>", "#include <yaml.h>", "int main(void) {" }
    for _, f in ipairs(FIELDS) do
      lines[#lines + 1] = string.format('  printf("%%zu\\n", (size_t)%s);', f[1])
    end
    lines[#lines + 1] = "  return 0;\n}\n"
    files.write(dir .. "/layout.c", table.concat(lines, "\n"))
    shell.must(string.format("cc -o %s/layout %s/layout.c", dir, dir))
    local out = shell.capture(dir .. "/layout")
    shell.must("rm -r " .. dir)
    local values = {}
    for n in out:gmatch("%d+") do
      values[#values + 1] = tonumber(n)
    end
    return values
  end

  it("match yaml.h's layout, field by field", function()
    local values = c_values()
    assert.equal(#FIELDS, #values)
    for i, f in ipairs(FIELDS) do
      assert.equal(values[i], f[2](), f[1])
    end
  end)
end)
