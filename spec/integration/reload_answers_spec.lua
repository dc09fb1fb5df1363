-- reload_answers_spec.lua - what `moonrover reload` says when the process
-- holding the pid file never answers: no answer within --timeout (exit 4),
-- and a holder that stops before answering (exit 1). The holder is a small
-- Python process that takes the pid file's lock as the agent does.
local e2e = require("support.e2e")

local HOLDER = [[
import fcntl, os, signal, sys, time
path, on_hup = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"%d\n" % os.getpid())
fcntl.flock(fd, fcntl.LOCK_EX)
if on_hup == "ignore":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
open(path + ".ready", "w").close()
time.sleep(30)
]]

describe("moonrover reload, when the agent does not answer", function()
  local dir, holder

  before_each(function()
    dir = e2e.tmpdir()
    local f = assert(io.open(dir .. "/holder.py", "w"))
    f:write(HOLDER)
    f:close()
  end)

  after_each(function()
    if holder then
      e2e.kill(holder)
      holder = nil
    end
    e2e.rmdir(dir)
  end)

  local function hold(on_hup)
    local pid_file = dir .. "/agent.pid"
    local p = assert(io.popen("/usr/bin/python3 " .. e2e.quote(dir .. "/holder.py") .. " " ..
      e2e.quote(pid_file) .. " " .. on_hup .. " >/dev/null 2>&1 & echo $!"))
    holder = tonumber(p:read("*l"))
    p:close()
    for _ = 1, 500 do
      if io.open(pid_file .. ".ready") then
        return pid_file
      end
      os.execute("sleep 0.01")
    end
    error("the pid file's holder did not start")
  end

  it("exits 4 when no answer comes within --timeout", function()
    local pid_file = hold("ignore")
    local code, out, err = e2e.run(e2e.quote(e2e.bin) .. " reload --pid-file " .. e2e.quote(pid_file) ..
      " --timeout 300ms")
    assert.equal(4, code, out .. err)
    assert.matches("did not answer within 0%.3 s", out .. err)
  end)

  it("exits 1 when the agent stops before it answers", function()
    local pid_file = hold("default")
    local code, out, err = e2e.run(e2e.quote(e2e.bin) .. " reload --pid-file " .. e2e.quote(pid_file) ..
      " --timeout 10s")
    assert.equal(1, code, out .. err)
    assert.matches("stopped before it answered", out .. err)
  end)
end)
