-- host_template.lua - the render context of host-mode naming templates
-- (Rover 0.3-0.5's scanner: "{{.Process.ExeName}}", "{{.Rover.HostIPV4
-- \"en0\"}}") on lib/go_template.lua, and the .Process and .Rover objects
-- that the Kubernetes context (kube_template.lua) shares.
--
--   .Process: ExeFilePath ExeName CommandLine Pid WorkDir ExeNameInCommandLine
--   .Rover:   InstanceID HostIPV4 "ifname" HostName
--   .Container: ID ("" on the host)
-- HostIPV4 "ifname" is that interface's first IPv4 address (ctx.rover.ipv4,
-- optional), as Rover's; where there is no such interface or it has none,
-- the host's first IPv4 address that is not loopback (ctx.rover.host_ip),
-- so that Rover 0.5's default "en0" names hosts that have no en0. There
-- being none at all is an error, as in Rover.
--
-- The ctx a template renders is the one process_finder.lua documents:
-- ctx.process.{exe_name, exe_path, command_line, pid, work_dir},
-- ctx.rover.{instance_id, host_ip, host_name, ipv4 (optional: fn(ifname) ->
-- address or nil)}, ctx.container.{id}.
local go_template = require("moonrover.lib.go_template")

local _M = {}

_M.PROCESS_FIELDS = { ExeFilePath = 0, ExeName = 0, CommandLine = 0, Pid = 0, WorkDir = 0, ExeNameInCommandLine = 0 }
_M.ROVER_FIELDS = { InstanceID = 0, HostIPV4 = 1, HostName = 0 }

local FIELDS = {
  Process = { args = 0, fields = _M.PROCESS_FIELDS },
  Rover = { args = 0, fields = _M.ROVER_FIELDS },
  Container = { args = 0, fields = { ID = 0 } },
}

-- The .Process object of ctx.process.
function _M.process(p)
  return {
    ExeFilePath = function() return p.exe_path or "" end,
    ExeName = function() return p.exe_name or "" end,
    CommandLine = function() return p.command_line or "" end,
    Pid = function() return p.pid end,
    WorkDir = function() return p.work_dir or "" end,
    -- The first word of the command line (its arguments are joined with spaces).
    ExeNameInCommandLine = function()
      local first = (p.command_line or ""):match("^%S+")
      if not first then
        return nil, "cannot found the command line"
      end
      return first
    end,
  }
end

-- The .Rover object of ctx.rover.
function _M.rover(r)
  return {
    InstanceID = function() return r.instance_id or "" end,
    HostIPV4 = function(_, name)
      local address = r.ipv4 and r.ipv4(name) or r.host_ip
      if (address or "") == "" then
        return nil, "could not found the ip v4 address from " .. tostring(name)
      end
      return address
    end,
    HostName = function() return r.host_name or "" end,
  }
end

local Renderer = {}
Renderer.__index = Renderer

-- The text for ctx, or nil and an error naming the template.
function Renderer:render(ctx)
  return self.tpl:render({
    Process = _M.process(ctx.process),
    Rover = _M.rover(ctx.rover),
    Container = { ID = function() return ctx.container.id or "" end },
  })
end

-- A renderer of text (named name in errors), or nil and the error.
function _M.compile(text, name)
  local tpl, err = go_template.compile(text, { name = name, fields = FIELDS })
  if not tpl then
    return nil, err
  end
  return setmetatable({ tpl = tpl }, Renderer)
end

return _M
