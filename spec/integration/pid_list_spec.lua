-- Specs for moonrover.pid_list on real processes: the live pids, a
-- process's start time (gone with it, new for a pid's next process), and
-- whether a process runs moonrover (this executable counts as one).
local pid_list = require("moonrover.pid_list")
local rt = require("moonrover.rt")

-- A process that has exited by the time this returns: its pid.
local function exited_pid()
  local p = assert(io.popen("sh -c 'echo $$'"))
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

describe("pid_list", function()
  it("lists the live pids, this process among them", function()
    local pids, n = pid_list.live_pids()
    local self, seen = rt.lib.mr_proc_self(), false
    for i = 0, n - 1 do
      seen = seen or pids[i] == self
    end
    assert.is_true(seen)
  end)

  it("gives a live process's start time, none for a process that exited", function()
    local start = pid_list.start_of(rt.lib.mr_proc_self())
    assert.is_true(start > 0)
    assert.equal(start, pid_list.start_of(rt.lib.mr_proc_self()))
    assert.is_nil(pid_list.start_of(exited_pid()))
  end)

  it("tells this executable for a moonrover, not a shell", function()
    assert.is_true(pid_list.is_moonrover(rt.lib.mr_proc_self()))
    local p = assert(io.popen("sh -c 'echo $$; exec sleep 5'"))
    local sleeper = tonumber(p:read("*l"))
    assert.is_false(pid_list.is_moonrover(sleeper))
    os.execute("kill " .. sleeper)
    p:close()
    assert.is_false(pid_list.is_moonrover(exited_pid()))
  end)
end)
