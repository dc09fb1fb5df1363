-- Specs for `moonrover check`'s report: marks, what-to-do lines, exit status.
local check = require("moonrover.commands.check_command")

local function feature(name, required)
  return { what = name .. " feature", required = required, fix = "fix " .. name }
end

describe("check.report", function()
  it("says the machine is fine when every required feature works", function()
    local text, missing = check.report({
      { name = "btf", feature = feature("btf", true), ok = true, detail = "present" },
      { name = "uprobe", feature = feature("uprobe", false), ok = false, detail = "absent" },
    })
    assert.same(0, missing)
    assert.matches("ok    btf", text)
    assert.matches("warn  uprobe", text)
    assert.matches("what to do: fix uprobe", text)
    assert.matches("This machine can run moonrover", text)
  end)

  it("counts missing required features", function()
    local text, missing = check.report({
      { name = "btf", feature = feature("btf", true), ok = false, detail = "no /sys/kernel/btf/vmlinux" },
    })
    assert.same(1, missing)
    assert.matches("FAIL  btf", text)
    assert.matches("what to do: fix btf", text)
    assert.matches("1 required feature%(s%) missing", text)
  end)

  it("says once what a user needs when it may not try some features, instead of kernel advice", function()
    local needs = "root (or CAP_BPF)"
    local text, missing = check.report({
      { name = "perf_event", feature = feature("perf_event", true), ok = false, denied = true,
        detail = "Operation not permitted" },
      { name = "tracepoint", feature = feature("tracepoint", true), ok = false, denied = true,
        detail = "tracefs is mounted, but this user cannot read its events" },
    }, needs)
    assert.same(2, missing)
    assert.is_nil(text:find("fix perf_event", 1, true))
    local _, pointers = text:gsub("what to do: run moonrover as below\n", "")
    assert.equal(2, pointers)
    local first = text:find(needs, 1, true)
    assert.truthy(first)
    assert.is_nil(text:find(needs, first + 1, true))
    assert.matches("\n2 feature%(s%) could not be tried by this user: moonrover needs root %(or CAP_BPF%)%.\n", text)
  end)

  it("has what it is for and what to do for every feature it describes", function()
    for _, f in pairs(check.FEATURES) do
      assert.is_string(f.fix)
      assert.is_string(f.what)
      assert.is_boolean(f.required)
    end
  end)
end)
