-- template.lua - Rover's Go-template naming strings for host-mode process
-- discovery ("{{.Process.ExeName}}", "{{.Rover.HostIPV4 \"en0\"}}", ...),
-- compiled once when the configuration is loaded so that a misspelt
-- placeholder is a load-time error, then rendered for each process.
--
-- Supported actions (Rover's render context plus .Container):
--   .Process.ExeName  .Process.ExeFilePath  .Process.CommandLine
--   .Process.Pid      .Process.WorkDir
--   .Rover.InstanceID .Rover.HostIPV4 "ifname"  .Rover.HostName
--   .Container.ID
-- Spaces inside the braces and Go's trim markers ("{{- " and " -}}") are
-- accepted. HostIPV4's interface name is required but not used: the address
-- is the host's (ctx.rover.host_ip).
--
-- The ctx a compiled template renders is the one process_finder.lua documents:
-- ctx.process.{exe_name, exe_path, command_line, pid, work_dir},
-- ctx.rover.{instance_id, host_ip, host_name}, ctx.container.{id}.
local _M = {}

local FIELDS = {
  [".Process.ExeName"] = function(ctx) return ctx.process.exe_name end,
  [".Process.ExeFilePath"] = function(ctx) return ctx.process.exe_path end,
  [".Process.CommandLine"] = function(ctx) return ctx.process.command_line end,
  [".Process.Pid"] = function(ctx) return string.format("%d", ctx.process.pid) end,
  [".Process.WorkDir"] = function(ctx) return ctx.process.work_dir end,
  [".Rover.InstanceID"] = function(ctx) return ctx.rover.instance_id end,
  [".Rover.HostName"] = function(ctx) return ctx.rover.host_name end,
  [".Container.ID"] = function(ctx) return ctx.container.id end,
}

-- Actions that take one string argument.
local WITH_ARG = {
  [".Rover.HostIPV4"] = function(ctx) return ctx.rover.host_ip end,
}

-- A Go string literal ("..." or `...`) making up all of s, or nil.
local function string_literal(s)
  return s:match('^"([^"]*)"$') or s:match("^`([^`]*)`$")
end

-- The getter for one action's body, or nil, err.
local function action(body)
  local name, rest = body:match("^(%.[%w%.]*)%s*(.-)$")
  if name and FIELDS[name] and rest == "" then
    return FIELDS[name]
  end
  if name and WITH_ARG[name] then
    if string_literal(rest) then
      return WITH_ARG[name]
    end
    return nil, string.format("%s needs one quoted interface name, as in {{%s \"en0\"}}", name, name)
  end
  return nil, string.format("unknown placeholder {{%s}}", body)
end

-- Splits "{{- body -}}" into body and its trim markers.
local function split_action(raw)
  local left = raw:find("^%-%s") ~= nil
  local right = raw:find("%s%-$") ~= nil
  local body = raw:sub(left and 3 or 1, right and -3 or -1)
  return body:match("^%s*(.-)%s*$"), left, right
end

-- The pieces of text: strings and getters, in order; or nil, err.
local function parse(text)
  local pieces, pos, trim_next = {}, 1, false
  while true do
    local open = text:find("{{", pos, true)
    local literal = text:sub(pos, open and open - 1 or -1)
    if trim_next then
      literal = literal:gsub("^%s+", "")
    end
    if not open then
      pieces[#pieces + 1] = literal
      return pieces
    end
    local close = text:find("}}", open + 2, true)
    if not close then
      return nil, string.format("unclosed {{ at position %d", open)
    end
    local body, left, right = split_action(text:sub(open + 2, close - 1))
    if left then
      literal = literal:gsub("%s+$", "")
    end
    local get, err = action(body)
    if not get then
      return nil, err
    end
    pieces[#pieces + 1] = literal
    pieces[#pieces + 1] = get
    pos, trim_next = close + 2, right
  end
end

-- A renderer for text: fn(ctx) -> string; or nil, err naming the problem.
function _M.compile(text)
  if type(text) ~= "string" then
    return nil, "not a string"
  end
  local pieces, err = parse(text)
  if not pieces then
    return nil, err
  end
  return function(ctx)
    local out = {}
    for i, piece in ipairs(pieces) do
      out[i] = type(piece) == "string" and piece or (piece(ctx) or "")
    end
    return table.concat(out)
  end
end

return _M
