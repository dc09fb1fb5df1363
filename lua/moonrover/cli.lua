-- cli.lua - the moonrover command line: picks the command, parses its
-- options, runs it, and turns every failure into one line and an exit code.
local args = require("moonrover.lib.args")

local _M = {}

local COMMANDS = {
  { name = "profile", module = "moonrover.commands.profile_command" },
  { name = "trace", module = "moonrover.commands.trace_command" },
  { name = "agent", module = "moonrover.commands.agent_command" },
  { name = "start", module = "moonrover.commands.agent_command", alias = "agent (Rover's 'start --config FILE')" },
  { name = "reload", module = "moonrover.commands.reload_command" },
  { name = "check", module = "moonrover.commands.check_command" },
  { name = "version", module = "moonrover.commands.version_command" },
}

local EXIT_USAGE = 2

local function say(fh, text)
  fh:write(text)
  fh:flush()
end

local function overview()
  local lines = {
    "usage: moonrover COMMAND [OPTIONS]",
    "",
    "An eBPF profiler and network tracer for Linux, programmed in Lua.",
    "",
    "commands:",
  }
  for _, c in ipairs(COMMANDS) do
    local summary = c.alias and ("the same as " .. c.alias) or require(c.module).summary
    lines[#lines + 1] = string.format("  %-10s %s", c.name, summary)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Run 'moonrover help COMMAND' (or 'moonrover COMMAND --help') for a command's options."
  return table.concat(lines, "\n") .. "\n"
end

local function find_command(name)
  for _, c in ipairs(COMMANDS) do
    if c.name == name then
      return require(c.module)
    end
  end
  return nil
end

local function unknown(name)
  say(io.stderr, "moonrover: unknown command '" .. name .. "' (try 'moonrover help')\n")
  return EXIT_USAGE
end

-- The command's --help text; an alias's usage line names the alias typed.
local function command_help(name, command)
  local usage = command.usage:gsub("^moonrover %S+", "moonrover " .. name, 1)
  return args.help(usage, command.description or command.summary, command.options), usage
end

-- `moonrover help [COMMAND]`: the command list, or that command's --help.
local function help(topic, extra)
  if extra ~= nil then
    say(io.stderr, "moonrover help: unexpected argument '" .. extra .. "' (usage: moonrover help [COMMAND])\n")
    return EXIT_USAGE
  end
  if topic == nil then
    say(io.stdout, overview())
    return 0
  end
  local command = find_command(topic)
  if not command then
    return unknown(topic)
  end
  say(io.stdout, (command_help(topic, command)))
  return 0
end

-- Runs the command in argv[1] with the rest of argv; returns the exit code.
function _M.main(argv)
  local name = argv[1]
  if name == nil then
    say(io.stdout, overview())
    return EXIT_USAGE
  end
  if name == "help" or name == "--help" or name == "-h" then
    return help(argv[2], argv[3])
  end
  if name == "--version" or name == "-v" then
    name = "version"
  end
  local command = find_command(name)
  if not command then
    return unknown(name)
  end
  local rest = { unpack(argv, 2) }
  local text, usage = command_help(name, command)
  if args.wants_help(command.options, rest) then
    say(io.stdout, text)
    return 0
  end
  local values, positional, given = args.parse(command.options, rest)
  if values and #positional > 0 then
    values, positional = nil, "unexpected argument '" .. positional[1] .. "' (usage: " .. usage .. ")"
  end
  if not values then
    say(io.stderr, "moonrover " .. name .. ": " .. positional .. "\n")
    return EXIT_USAGE
  end
  return command.run(values, given)
end

return _M
