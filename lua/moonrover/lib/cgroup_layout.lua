-- cgroup_layout.lua - where a mount namespace has its cgroup hierarchies,
-- from the text of /proc/PID/mountinfo: the cgroup v2 (unified) hierarchy,
-- the cgroup v1 ones and their controllers, and which layout that makes:
--   "unified"  cgroup v2 only (Debian 12, Ubuntu 22.04 and later: /sys/fs/cgroup)
--   "hybrid"   cgroup v2 beside v1 hierarchies (/sys/fs/cgroup/unified and
--              /sys/fs/cgroup/<controller>, systemd's hybrid mode)
--   "v1"       cgroup v1 hierarchies only
--   "none"     no cgroup hierarchy mounted
-- A mount hidden by another one mounted over it or over a directory above
-- it (cgroup2 mounted over /sys/fs/cgroup, say) does not count: its files
-- cannot be reached by their path.
local _M = {}

-- Options of a v1 mount that are not controllers.
local NOT_CONTROLLERS = {
  rw = true, ro = true, xattr = true, noprefix = true, clone_children = true, cpuset_v2_mode = true,
  favordynmods = true,
}

-- mountinfo writes space, tab, newline and backslash as \ and three octal digits.
local function unescape(s)
  return (s:gsub("\\([0-7][0-7][0-7])", function(o) return string.char(tonumber(o, 8)) end))
end

local function controllers_of(options)
  local out = {}
  for opt in options:gmatch("[^,]+") do
    if not NOT_CONTROLLERS[opt] and not opt:find("^release_agent=") then
      out[#out + 1] = opt
    end
  end
  return out
end

-- One line of mountinfo: { id, parent, root, point, fs, controllers }, or
-- nil when it is not one.
local function parse_line(line)
  local id, parent, root, point, rest = line:match("^(%d+) (%d+) %S+ (%S+) (%S+) (.*)$")
  if not id then
    return nil
  end
  local fs, options = rest:match(" %- (%S+) %S+ (%S+)$")
  if not fs then
    return nil
  end
  return { id = tonumber(id), parent = tonumber(parent), root = unescape(root), point = unescape(point), fs = fs,
    controllers = fs == "cgroup" and controllers_of(options) or {} }
end

-- The mounts of a mountinfo text, in its order.
function _M.mounts(text)
  local out = {}
  for line in (text or ""):gmatch("[^\n]+") do
    out[#out + 1] = parse_line(line)
  end
  return out
end

-- Whether directory a is b or above it.
local function at_or_above(a, b)
  return a == b or a == "/" or b:sub(1, #a + 1) == a .. "/"
end

-- Whether mount a is one of the mounts b was mounted on, by ids.
local function beneath(a, b, by_id)
  local seen, m = {}, by_id[b.parent]
  while m and not seen[m.id] do
    if m.id == a.id then
      return true
    end
    seen[m.id] = true
    m = by_id[m.parent]
  end
  return false
end

-- Whether mount m cannot be reached by its path: another mount sits there
-- or above it, and m is not mounted on it (so it covers m).
local function hidden(m, mounts, by_id)
  for _, other in ipairs(mounts) do
    if other ~= m and at_or_above(other.point, m.point) and not beneath(other, m, by_id) then
      return true
    end
  end
  return false
end

-- The cgroup mounts (v1 and v2) of a mountinfo text that their mount point
-- leads to, in its order.
function _M.cgroup_mounts(text)
  local mounts, by_id, out = _M.mounts(text), {}, {}
  for _, m in ipairs(mounts) do
    by_id[m.id] = m
  end
  for _, m in ipairs(mounts) do
    if (m.fs == "cgroup" or m.fs == "cgroup2") and not hidden(m, mounts, by_id) then
      out[#out + 1] = m
    end
  end
  return out
end

-- The layout of a mountinfo text: { kind, v2 = { point, root } or nil,
-- v1 = { { point, root, controllers }, ... } }. Of several v2 mounts, the
-- first of the hierarchy's root ("/") is taken, else the first.
function _M.find(text)
  local v2, v1 = nil, {}
  for _, m in ipairs(_M.cgroup_mounts(text)) do
    if m.fs == "cgroup2" and (not v2 or (v2.root ~= "/" and m.root == "/")) then
      v2 = { point = m.point, root = m.root }
    elseif m.fs == "cgroup" then
      v1[#v1 + 1] = { point = m.point, root = m.root, controllers = m.controllers }
    end
  end
  local kind = "none"
  if v2 and #v1 > 0 then
    kind = "hybrid"
  elseif v2 then
    kind = "unified"
  elseif #v1 > 0 then
    kind = "v1"
  end
  return { kind = kind, v2 = v2, v1 = v1 }
end

-- Where the v1 hierarchies are: the directory holding them all, or their
-- mount points.
local function v1_where(v1)
  local dir = v1[1].point:match("^(.*)/[^/]+$")
  local points, controllers = {}, {}
  for i, h in ipairs(v1) do
    points[i] = h.point
    if h.point:match("^(.*)/[^/]+$") ~= dir then
      dir = nil
    end
    for _, c in ipairs(h.controllers) do
      controllers[#controllers + 1] = c
    end
  end
  local where = dir and dir ~= "" and dir or table.concat(points, ", ")
  return where .. " (" .. table.concat(controllers, ",") .. ")"
end

-- One line for a layout: "hybrid, cgroup v2 at /sys/fs/cgroup/unified, v1 at
-- /sys/fs/cgroup (cpu,memory,name=systemd)".
function _M.describe(layout)
  local parts = {}
  if layout.v2 then
    local root = layout.v2.root ~= "/" and " (its " .. layout.v2.root .. ")" or ""
    parts[#parts + 1] = "cgroup v2 at " .. layout.v2.point .. root
  end
  if #layout.v1 > 0 then
    parts[#parts + 1] = (layout.v2 and "v1 at " or "cgroup v1 at ") .. v1_where(layout.v1)
  end
  if #parts == 0 then
    return "none, no cgroup hierarchy is mounted"
  end
  return layout.kind .. ", " .. table.concat(parts, ", ")
end

return _M
