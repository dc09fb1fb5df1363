-- check_spec.lua - `moonrover check` describes exactly the features the
-- runtime probes (runtime/kernel/check.c), and each probe answers with why.
local check = require("moonrover.commands.check_command")
local rt = require("moonrover.rt")

local function sorted(list)
  table.sort(list)
  return list
end

describe("moonrover check's features", function()
  it("describes every feature the runtime probes, and no other", function()
    local probed = check.runtime_features()
    assert.is_true(#probed >= 8, "the runtime lists " .. #probed .. " features")
    local described = {}
    for name in pairs(check.FEATURES) do
      described[#described + 1] = name
    end
    assert.same(sorted(described), sorted(probed))
  end)

  it("runs each probe and says why, whatever the answer", function()
    for _, r in ipairs(check.probe_all()) do
      assert.is_true(#r.detail > 0, r.name .. " gave no detail")
      assert.is_boolean(r.ok)
      assert.equal(check.FEATURES[r.name], r.feature)
    end
  end)

  it("refuses a feature it does not know, saying so", function()
    local detail = rt.ffi.new("char[128]")
    assert.equal(-22, rt.lib.mr_kernel_check("warp_drive", detail, 128))
    assert.equal("unknown feature 'warp_drive'", rt.ffi.string(detail))
  end)
end)
