-- stand_in.lua - what the specs' Python stand-in servers (the OAP of oap.lua,
-- the Kubernetes API server of kube_api.lua) share: started in the
-- background with its pid and exit status written to files of its own, its
-- ports read from the line it prints once it listens, its standard error
-- and exit status read back, and stopped by a signal.
--
-- A stand-in is a table with the paths out, err, pid_file and exit_file, of
-- a class made by stand_in.class() (with stderr() and exit_status()).
local clock = require("support.clock")
local e2e = require("support.e2e")

local _M = {}

_M.PYTHON = "/usr/bin/python3"

-- The path of the file rel (a path from the top of the source tree).
function _M.source(rel)
  return (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/" .. rel
end

-- The shell command line of words, each quoted.
function _M.command_line(words)
  local quoted = {}
  for i, w in ipairs(words) do
    quoted[i] = e2e.quote(w)
  end
  return table.concat(quoted, " ")
end

-- Runs the shell command line cmd in the background for stand-in self (the
-- files of an earlier run removed first) and sets self.pid.
function _M.launch(self, cmd)
  for _, f in ipairs({ self.exit_file, self.pid_file, self.out }) do
    os.remove(f)
  end
  os.execute(string.format("(%s >%s 2>%s & echo $! >%s; wait $!; echo $? >%s) >/dev/null 2>&1 &", cmd,
    e2e.quote(self.out), e2e.quote(self.err), e2e.quote(self.pid_file), e2e.quote(self.exit_file)))
  self.pid = clock.wait_for(function() return tonumber(e2e.read_all(self.pid_file) or "") end, 5)
end

-- Waits at most limit seconds for self's standard output to match pattern:
-- its captures as numbers (the ports), or nil when self exited first or
-- never printed them.
function _M.wait_ports(self, pattern, limit)
  local found = clock.wait_for(function()
    local captures = { (e2e.read_all(self.out) or ""):match(pattern) }
    if captures[1] or self:exit_status() then
      return captures
    end
  end, limit)
  if not (found and found[1]) then
    return nil
  end
  for i, v in ipairs(found) do
    found[i] = tonumber(v)
  end
  return found
end

-- Sends self signal sig (a name: "TERM") and waits at most 10 s for it to
-- exit, then kills it; returns its exit status (nil when it had to be
-- killed). A stand-in already stopped gives its status again.
function _M.signal(self, sig)
  if not self.pid then
    return self:exit_status()
  end
  os.execute("kill -" .. sig .. " " .. self.pid .. " 2>/dev/null")
  local status = clock.wait_for(function() return self:exit_status() end, 10)
  if not status then
    os.execute("kill -KILL " .. self.pid .. " 2>/dev/null")
  end
  self.pid = nil
  return status
end

-- A stand-in's metatable, with stderr(): what it wrote there, and
-- exit_status(): its exit status once it has exited, else nil.
function _M.class()
  local Class = {}
  Class.__index = Class

  function Class:stderr()
    return e2e.read_all(self.err) or ""
  end

  function Class:exit_status()
    return tonumber(e2e.read_all(self.exit_file) or "")
  end

  return Class
end

return _M
