-- Specs for lib/cgroup_layout.lua: the cgroup layout of mountinfo texts as
-- Debian 12, a hybrid host, a cgroup v1 host, a private mount namespace with
-- cgroup2 mounted over the hybrid tree, and a container write them.
local cgroup_layout = require("moonrover.lib.cgroup_layout")

local function text(lines)
  return table.concat(lines, "\n") .. "\n"
end

local BASE = {
  "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro",
  "23 22 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw",
  "24 22 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:3 - proc proc rw",
}

local DEBIAN_12 = text({ BASE[1], BASE[2], BASE[3],
  "25 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    .. "rw,nsdelegate,memory_recursiveprot",
})

local HYBRID = {
  BASE[1], BASE[2], BASE[3],
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
  "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,release_agent=/lib/x,name=systemd",
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
}

describe("lib/cgroup_layout", function()
  it("finds Debian 12's unified hierarchy at /sys/fs/cgroup", function()
    local layout = cgroup_layout.find(DEBIAN_12)
    assert.same({ kind = "unified", v2 = { point = "/sys/fs/cgroup", root = "/" }, v1 = {} }, layout)
    assert.equal("unified, cgroup v2 at /sys/fs/cgroup", cgroup_layout.describe(layout))
  end)

  it("finds a hybrid host's v2 hierarchy beside its v1 controllers", function()
    local layout = cgroup_layout.find(text(HYBRID))
    assert.equal("hybrid", layout.kind)
    assert.same({ point = "/sys/fs/cgroup/unified", root = "/" }, layout.v2)
    assert.same({ "cpu", "cpuacct" }, layout.v1[1].controllers)
    assert.same({ "name=systemd" }, layout.v1[3].controllers)
    assert.equal("hybrid, cgroup v2 at /sys/fs/cgroup/unified, v1 at /sys/fs/cgroup (cpu,cpuacct,memory,name=systemd)",
      cgroup_layout.describe(layout))
  end)

  it("finds v1 hierarchies alone, and names their mount points when they are not in one directory", function()
    local layout = cgroup_layout.find(text({ BASE[1], BASE[2], HYBRID[4], HYBRID[5],
      "50 22 0:40 / /cgroup/memory rw - cgroup cgroup rw,memory" }))
    assert.equal("v1", layout.kind)
    assert.is_nil(layout.v2)
    assert.equal("v1, cgroup v1 at /sys/fs/cgroup/cpu,cpuacct, /cgroup/memory (cpu,cpuacct,memory)",
      cgroup_layout.describe(layout))
  end)

  it("leaves out what a mount over /sys/fs/cgroup hides (unshare, then mount -t cgroup2)", function()
    local lines = { unpack(HYBRID) }
    lines[#lines + 1] = "68 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 none rw"
    local layout = cgroup_layout.find(text(lines))
    assert.same({ kind = "unified", v2 = { point = "/sys/fs/cgroup", root = "/" }, v1 = {} }, layout)
    -- mounted over a directory above: /sys hides everything below it
    lines[#lines + 1] = "70 22 0:50 / /sys rw - sysfs sysfs rw"
    assert.equal("none", cgroup_layout.find(text(lines)).kind)
  end)

  it("reads escaped mount points and a container's hierarchy below the root", function()
    local layout = cgroup_layout.find(text({ BASE[1],
      "90 22 0:26 /kubepods/pod1 /my\\040cgroups ro,nosuid - cgroup2 cgroup rw" }))
    assert.same({ point = "/my cgroups", root = "/kubepods/pod1" }, layout.v2)
    assert.equal("unified, cgroup v2 at /my cgroups (its /kubepods/pod1)", cgroup_layout.describe(layout))
  end)

  it("prefers the v2 mount of the hierarchy's root", function()
    local layout = cgroup_layout.find(text({ BASE[1],
      "90 22 0:26 /a /srv/a rw - cgroup2 cgroup2 rw",
      "91 22 0:26 / /srv/all rw - cgroup2 cgroup2 rw",
    }))
    assert.same({ point = "/srv/all", root = "/" }, layout.v2)
  end)

  it("says when nothing is mounted, and skips lines that are not mounts", function()
    local layout = cgroup_layout.find(text({ BASE[1], "garbage", "25 23 0:26 / /sys/fs/cgroup rw - cgroup2" }))
    assert.same({ kind = "none", v1 = {} }, layout)
    assert.equal("none, no cgroup hierarchy is mounted", cgroup_layout.describe(layout))
    assert.equal("none", cgroup_layout.find(nil).kind)
  end)
end)
