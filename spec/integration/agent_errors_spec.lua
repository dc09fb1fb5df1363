-- agent_errors_spec.lua - mr_agent_run (runtime/agent/agent.c) returns the
-- code of the part that failed, with its message, rather than one code per
-- part: the pid file and the HTTP endpoint fail before anything is loaded
-- into the kernel, so this runs without root.
local rt = require("moonrover.rt").with_test_api()
local errno = require("support.errno")
local shell = require("support.shell")

local ffi, lib = rt.ffi, rt.lib

local ENOENT, EINVAL = errno.ENOENT, errno.EINVAL

-- Runs the agent with opts set on struct mr_agent_opts; its code and message.
local function run(opts)
  local c = ffi.new("struct mr_agent_opts")
  local keep = {}
  for k, v in pairs(opts) do
    keep[#keep + 1] = v
    c[k] = v
  end
  local err = ffi.new("char[512]")
  local rc = lib.mr_agent_run(c, err, 512)
  return rc, ffi.string(err), keep
end

describe("mr_agent_run's failures", function()
  local dir

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-agent-errors.XXXXXX"):gsub("%s+$", "")
  end)

  after_each(function()
    shell.must("rm -rf " .. dir)
  end)

  it("pass up the pid file's own code", function()
    local rc, err = run({ pid_file = dir .. "/missing/agent.pid", http_address = "" })
    assert.equal(-ENOENT, rc)
    assert.equal("cannot use the pid file " .. dir .. "/missing/agent.pid: " .. dir ..
      "/missing: No such file or directory", err)
  end)

  it("pass up the HTTP endpoint's own code", function()
    local rc, err = run({ http_address = "127.0.0.1:port" })
    assert.equal(-EINVAL, rc)
    assert.equal("cannot listen on 127.0.0.1:port: expected host:port or [ipv6]:port", err)
  end)
end)
