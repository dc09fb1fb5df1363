-- config_file_spec.lua - the --config file is read once, through the runtime
-- (runtime/files/text_file.c): only a regular file of at most 4 MiB, a FIFO
-- or a device refused without blocking; and `moonrover start` with a bad
-- file stops before anything runs: exit 1, one line per problem, no Lua
-- traceback.
local config = require("moonrover.config")
local e2e = require("support.e2e")
local write = require("support.files").write

-- Longest `moonrover start` may take to refuse a file; the agent it would
-- start otherwise runs until killed, which fails the case.
local REFUSE_S = 20

-- Runs `moonrover start --config path`; exit code, stdout, stderr.
local function start(path)
  return e2e.run(string.format("timeout -s KILL %d %s start --config %s --http off --pid-file off", REFUSE_S,
    e2e.quote(e2e.bin), e2e.quote(path)))
end

local function lines_of(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    out[#out + 1] = line
  end
  return out
end

-- Every case works in a directory of its own.
local dir

before_each(function()
  dir = e2e.tmpdir()
end)

after_each(function()
  e2e.rmdir(dir)
end)

describe("reading the --config file", function()
  it("reads a regular file, and one behind a symbolic link", function()
    write(dir .. "/rover.yaml", "core:\n  cluster_name: c\n")
    os.execute("ln -s rover.yaml " .. dir .. "/link.yaml")
    assert.same("core:\n  cluster_name: c\n", config.read(dir .. "/rover.yaml"))
    assert.same("core:\n  cluster_name: c\n", config.read(dir .. "/link.yaml"))
    local cfg, text = config.load(dir .. "/link.yaml")
    assert.same("c", cfg.core.cluster_name)
    assert.same("core:\n  cluster_name: c\n", text)
  end)

  it("refuses what is not a regular file, naming what it is", function()
    assert(os.execute("mkfifo " .. dir .. "/fifo.yaml") == 0)
    local _, err = config.read(dir .. "/fifo.yaml")
    assert.equal("cannot read " .. dir .. "/fifo.yaml: it is a FIFO (named pipe), not a regular file", err)
    _, err = config.read(dir)
    assert.equal("cannot read " .. dir .. ": it is a directory, not a regular file", err)
    _, err = config.read("/dev/null")
    assert.equal("cannot read /dev/null: it is a character device, not a regular file", err)
    _, err = config.read(dir .. "/missing.yaml")
    assert.equal("cannot read " .. dir .. "/missing.yaml: No such file or directory", err)
  end)

  it("reads up to 4 MiB and refuses a byte more", function()
    local limit = config.MAX_BYTES
    assert.equal(4 * 1024 * 1024, limit)
    local comment = "#" .. string.rep("x", 1022) .. "\n"
    write(dir .. "/at_limit.yaml", string.rep(comment, limit / 1024))
    assert.equal(limit, #assert(config.read(dir .. "/at_limit.yaml")))
    write(dir .. "/over.yaml", string.rep(comment, limit / 1024) .. "\n")
    local _, err = config.read(dir .. "/over.yaml")
    assert.equal("cannot read " .. dir .. "/over.yaml: it is larger than 4 MiB", err)
  end)

  it("compiles the naming rules' regular expressions when it checks the file", function()
    write(dir .. "/rover.yaml", "process_discovery:\n  scanner:\n    regex:\n      - match_cmd: 'java ('\n"
      .. "        service_name: s\n")
    local _, err = config.load(dir .. "/rover.yaml")
    assert.matches('^[^\n]*/rover%.yaml: process_discovery%.scanner%.regex%[1%]%.match_cmd is "java %(": expected a '
      .. "POSIX extended regular expression %(invalid regular expression", err)
  end)
end)

describe("moonrover start with a bad --config file", function()
  -- The stderr lines of a start refused with exit 1, once each checked for
  -- what must never be in them.
  local function refused(text)
    local path = dir .. "/rover.yaml"
    write(path, text)
    local code, out, err = start(path)
    assert.equal(1, code, "exit code; stdout:\n" .. out .. "\nstderr:\n" .. err)
    assert.not_matches("traceback", err)
    assert.not_matches("running", err .. out)
    local lines = lines_of(err)
    for _, line in ipairs(lines) do
      assert.equal("moonrover agent: " .. path .. ": ", line:sub(1, #path + 19))
    end
    return lines
  end

  it("stops before anything runs, with one line per problem of a core section", function()
    local lines = refused("core:\n  backend:\n    addr: [1,2]\n    enable_TLS: maybe\nprocess_discovery:\n"
      .. "  heartbeat_period: soon\n  properties_report_period: 0\nprofiling:\n  check_interval: -1s\n")
    local keys = {}
    for i, line in ipairs(lines) do
      keys[i] = line:match(": ([%w_.]+) is ")
    end
    assert.same({ "core.backend.addr", "core.backend.enable_tls", "process_discovery.heartbeat_period",
      "process_discovery.properties_report_period", "profiling.check_interval" }, keys)
  end)

  it("refuses durations that are not positive Go durations, and a broken override", function()
    for _, value in ipairs({ "20 seconds", "-20s", "0s" }) do
      local lines = refused("core:\n  cluster_name: c\nprocess_discovery:\n  heartbeat_period: " .. value .. "\n")
      assert.equal(1, #lines)
      assert.matches('heartbeat_period is "' .. value .. '": expected a duration of at least 1s', lines[1], 1, true)
    end
    local lines = refused("core:\n  backend:\n    addr: ${ROVER_BACKEND_ADDR\n")
    assert.equal(1, #lines)
    assert.matches('core.backend.addr is "${ROVER_BACKEND_ADDR": expected a value, or a whole ${NAME:default} '
      .. "override", lines[1], 1, true)
  end)

  it("refuses unknown keys and bad nested values, all at once", function()
    local lines = refused("core:\n  bogus_key: 1\naccess_log: {active: banana}\npprof: {port: lots}\nprofiling:\n"
      .. "  continuous:\n    fetch_interval: never\n  task:\n    on_cpu:\n      dump_period: 1ns\n"
      .. "    network:\n      protocol_analyze:\n        per_cpu_buffer: -200KB\n")
    assert.equal(6, #lines)
  end)

  it("refuses a FIFO without waiting for a writer, and a file over 4 MiB", function()
    assert(os.execute("mkfifo " .. dir .. "/fifo.yaml") == 0)
    local code, _, err = start(dir .. "/fifo.yaml")
    assert.equal(1, code)
    assert.equal("moonrover agent: cannot read " .. dir .. "/fifo.yaml: it is a FIFO (named pipe), not a regular "
      .. "file\n", err)
    local keys = { "agent:" }
    for i = 1, 400000 do
      keys[#keys + 1] = string.format("  key%d: value", i)
    end
    write(dir .. "/keys.yaml", table.concat(keys, "\n"))
    code, _, err = start(dir .. "/keys.yaml")
    assert.equal(1, code)
    assert.equal("moonrover agent: cannot read " .. dir .. "/keys.yaml: it is larger than 4 MiB\n", err)
  end)
end)
