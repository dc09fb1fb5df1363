-- Specs for `moonrover agent`'s options: the config file fills what the
-- command line did not give, with Rover's overrides and clear errors.
local args = require("moonrover.lib.args")
local agent_cmd = require("moonrover.commands.agent_command")
local files = require("support.files")
local write = files.write

-- apply_config on the text run() would have read from path.
local function apply(values, given, path)
  return agent_cmd.apply_config(values, given, path, assert(files.read(path)))
end

describe("moonrover agent options", function()
  local path

  before_each(function()
    path = os.tmpname()
  end)

  after_each(function()
    os.remove(path)
  end)

  it("takes the agent section and logger.level from the config file", function()
    write(path, "logger:\n  level: WARNING\nagent:\n  scripts: /etc/policies\n  budget_ms: 250\n  http: 'off'\n")
    local values, _, given = args.parse(agent_cmd.options, { "--config", path })
    assert(apply(values, given, path))
    local o = agent_cmd.opts_from(values)
    assert.same("/etc/policies", o.user_dir)
    assert.same(250, o.budget_ms)
    assert.same("", o.http_address)
    assert.same(2, o.log_level)
    assert.same(4096, o.batch_max)
  end)

  it("lets command-line options win over the file", function()
    write(path, "agent:\n  budget_ms: 250\n  queue: 1024\n")
    local values, _, given = args.parse(agent_cmd.options, { "-c", path, "--budget-ms", "900" })
    assert(apply(values, given, path))
    assert.same(900, values["budget-ms"])
    assert.same(1024, values.queue)
  end)

  it("reports bad values, unknown sections and unknown levels with the file and key", function()
    write(path, "agent:\n  budget_ms: 5\n")
    local values, _, given = args.parse(agent_cmd.options, {})
    local ok, err = apply(values, given, path)
    assert.is_nil(ok)
    assert.same(path .. ': agent.budget_ms is "5": expected a whole number from 10 to 60000', err)
    write(path, "agnet:\n  x: 1\n")
    ok, err = apply(values, given, path)
    assert.is_nil(ok)
    assert.matches(': agnet: unknown key', err, 1, true)
    write(path, "logger:\n  level: LOUD\n")
    ok, err = apply(values, given, path)
    assert.is_nil(ok)
    assert.matches('logger.level is "LOUD": expected one of', err, 1, true)
  end)

  it("accepts the shipped configs/rover_configs.yaml", function()
    local shipped = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/configs/rover_configs.yaml"
    local values, _, given = args.parse(agent_cmd.options, {})
    assert(apply(values, given, shipped))
    assert.same("127.0.0.1:9464", values.http)
    assert.same("info", values["log-level"])
  end)
end)
