-- reload_command_spec.lua - `moonrover reload`'s options: how long it waits
-- for the agent's answer (--timeout, a duration), and --no-wait.
local args = require("moonrover.lib.args")
local reload = require("moonrover.commands.reload_command")

local function parse(argv)
  return args.parse(reload.options, argv)
end

describe("moonrover reload's options", function()
  it("waits 10 s by default, and as long as --timeout says in any unit", function()
    assert.equal(10, parse({}).timeout)
    assert.equal(120, parse({ "--timeout", "2m" }).timeout)
    assert.equal(0.5, parse({ "--timeout", "500ms" }).timeout)
    assert.is_nil(parse({})["no-wait"])
    assert.is_true(parse({ "--no-wait" })["no-wait"])
  end)

  it("refuses a wait of nothing, of more than an hour, or that is not a duration", function()
    local reasons = { ["0"] = "is not a duration above zero", ["2h"] = "is more than an hour",
      ["soon"] = "is not a duration" }
    for text, why in pairs(reasons) do
      local values, err = parse({ "--timeout", text })
      assert.is_nil(values)
      assert.matches("^invalid value for %-%-timeout: '" .. text .. "' ", err)
      assert.matches(why, err, 1, true)
    end
  end)

  it("refuses --timeout with --no-wait as a usage error, before signalling anything", function()
    local values, _, given = parse({ "--timeout", "30s", "--no-wait" })
    local saved, said = io.stderr, {}
    io.stderr = { write = function(_, text) said[#said + 1] = text end } -- luacheck: ignore 122 (captures the error)
    local code = reload.run(values, given)
    io.stderr = saved -- luacheck: ignore 122
    assert.equal(2, code)
    assert.matches("^moonrover reload: %-%-timeout and %-%-no%-wait cannot go together", table.concat(said))
  end)

  it("lists every exit status in its help", function()
    for code = 0, 4 do
      assert.matches("\n  " .. code .. "  ", reload.description, 1, true)
    end
  end)
end)
