-- cli_spec.lua - the command line's rules that hold before any command runs:
-- stray arguments are usage errors, help names what the user typed, and
-- help without options has no empty section.
local cli = require("moonrover.cli")

-- Runs cli.main with argv; returns the exit code, stdout and stderr.
local function run(argv)
  local saved_out, saved_err = io.stdout, io.stderr
  local out, err = {}, {}
  local function sink(into)
    return { write = function(self, text) into[#into + 1] = text return self end, flush = function() end }
  end
  io.stdout, io.stderr = sink(out), sink(err) -- luacheck: ignore 122 (the spec captures the output)
  local ok, code = pcall(cli.main, argv)
  io.stdout, io.stderr = saved_out, saved_err -- luacheck: ignore 122
  assert(ok, code)
  return code, table.concat(out), table.concat(err)
end

describe("moonrover's command line", function()
  it("refuses an argument no command takes, before doing anything", function()
    for _, argv in ipairs({ { "profile", "extra" }, { "check", "now" }, { "version", "x" },
      { "reload", "--pid-file", "/run/x.pid", "extra" } }) do
      local code, out, err = run(argv)
      assert.equal(2, code)
      assert.equal("", out)
      assert.matches("^moonrover " .. argv[1] .. ": unexpected argument '" .. argv[#argv] .. "' %(usage: moonrover "
        .. argv[1], err)
    end
  end)

  it("names the alias the user typed in its help", function()
    local code, out = run({ "start", "--help" })
    assert.equal(0, code)
    assert.matches("^usage: moonrover start ", out)
  end)

  it("leaves out the options section of a command that has none", function()
    local code, out = run({ "check", "--help" })
    assert.equal(0, code)
    assert.is_nil(out:find("options:", 1, true), out)
    assert.matches("^usage: moonrover check\n", out)
  end)

  it("prints a command's --help for 'help COMMAND', and the command list for 'help'", function()
    local code, out = run({ "help", "profile" })
    local help_code, help_out = run({ "profile", "--help" })
    assert.equal(0, code)
    assert.equal(0, help_code)
    assert.equal(help_out, out)
    assert.matches("^usage: moonrover profile ", out)
    code, out = run({ "help" })
    assert.equal(0, code)
    assert.matches("commands:\n", out)
    assert.matches("\n  profile ", out)
  end)

  it("refuses a second word after 'help'", function()
    local code, out, err = run({ "help", "profile", "extra" })
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("moonrover help: unexpected argument 'extra' (usage: moonrover help [COMMAND])\n", err)
  end)

  it("takes -h given as an option's value, or after '--', for no request for help", function()
    local code, out, err = run({ "reload", "--pid-file", "-h", "--no-wait", "--", "-h" })
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("^moonrover reload: unexpected argument '%-h'", err)
  end)

  it("says so when 'help' names an unknown command", function()
    local code, out, err = run({ "help", "profil" })
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("moonrover: unknown command 'profil' (try 'moonrover help')\n", err)
  end)

  it("says an unknown command or option is a usage error", function()
    assert.equal(2, (run({ "profil" })))
    assert.equal(2, (run({ "profile", "--bogus" })))
  end)
end)
