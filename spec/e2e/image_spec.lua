-- End-to-end spec of the container image (scripts/image.sh): built from
-- Debian packages only, it runs `moonrover check` and profiles a process of
-- the host from inside, with --privileged --pid=host as the DaemonSet runs it.
local e2e = require("support.e2e")
local podman = require("support.podman")

local function skip_reason()
  local reason = e2e.skip_reason()
  if reason then
    return reason
  end
  if e2e.run("command -v podman") ~= 0 then
    return "podman is not installed (scripts/setup.sh installs it)"
  end
  local flags, said = podman.flags()
  if not flags then
    return "podman cannot run a container on this machine: " .. said
  end
  return nil
end
local it = require("support.skip").guard(it, pending, skip_reason())

local HOST = { "--privileged", "--pid=host" }

describe("the container image (end to end)", function()
  it("runs moonrover check", function()
    local code, out, err = podman.run(podman.flags(), HOST, { "check" })
    assert.same(0, code, out .. err)
    assert.matches("This machine can run moonrover.", out, 1, true)
  end)

  it("profiles a process of the host, its frames symbolized", function()
    local pid = e2e.spawn("cpu_ratio", "30")
    local code, out, err = podman.run(podman.flags(), HOST,
      { "profile", "-p", tostring(pid), "-d", "2", "-o", "-", "-f", "folded" })
    e2e.kill(pid)
    assert.same(0, code, out .. err)
    assert.matches("\ncpu_ratio;[^\n]*;main;burn_alpha %d+\n", "\n" .. out)
  end)
end)
