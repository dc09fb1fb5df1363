-- tmpfs.lua - a small tmpfs mounted for one spec case (a full disk on
-- demand): the case is pending, saying why, where mounting is refused (root
-- without CAP_SYS_ADMIN, as in many containers), and the mount goes away
-- when the case ends, whatever its asserts did.
local _M = {}

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Mounts a tmpfs of size (as mount's size=, "64k") at the new directory dir
-- for the running case; busted's pending and finally are passed in.
function _M.mount(dir, size, pending, finally)
  local f = assert(io.popen("mkdir " .. quote(dir) .. " && mount -t tmpfs -o size=" .. size ..
    " moonrover-spec " .. quote(dir) .. " 2>&1; echo \"rc=$?\"", "r"))
  local out = f:read("*a")
  f:close()
  local msg, rc = out:match("^(.-)%s*rc=(%d+)%s*$")
  if rc ~= "0" then
    pending("cannot mount a tmpfs here (" .. (msg ~= "" and msg or "mount failed") .. ")")
  end
  finally(function()
    os.execute("umount " .. quote(dir) .. " >/dev/null 2>&1")
  end)
end

return _M
