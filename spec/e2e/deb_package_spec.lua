-- End-to-end spec of the Debian package: built by scripts/deb.sh, installed
-- with dpkg -i into a fresh Debian root (scripts/debian_root.sh), where
-- `moonrover check` runs from the installed layout and the unit verifies.
local e2e = require("support.e2e")
local package = require("support.debian_package")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

describe("the .deb (end to end)", function()
  it("installs with dpkg -i on a fresh Debian root, where check passes and the unit verifies", function()
    local deb = package.deb()
    local root = package.root(deb)
    local name = deb:match("[^/]+$")
    local code, out, err = package.in_root(root, deb, "dpkg -i /tmp/" .. name ..
      " && moonrover check && systemd-analyze verify moonrover.service" ..
      " && test -f /etc/moonrover/rover_configs.yaml && test -f /usr/share/moonrover/lua/moonrover/consts.lua")
    assert.same(0, code, out .. err)
    assert.matches("Setting up moonrover ", out)
    assert.matches("This machine can run moonrover.", out, 1, true)
    assert.same("", err)
  end)

  it("marks its files of /etc as configuration files", function()
    local code, out, err = e2e.run("dpkg-deb -I " .. e2e.quote(package.deb()) .. " conffiles")
    assert.same(0, code, err)
    assert.same("/etc/moonrover/rover_configs.yaml\n/etc/default/moonrover\n", out)
  end)
end)
