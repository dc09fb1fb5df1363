-- args.lua - command-line options from a declarative list: parsing
-- (--name value, --name=value, -n value, -nvalue, flags, `--` ending the
-- options) and the --help text, and the value converters every command shares
-- (durations, choices, pids).
--
-- An option: { name = "duration", short = "d", arg = "SECONDS", help = "...",
--              default = 10, convert = function(text) return value or nil, err end }
-- Options without `arg` are flags (true when given).
local duration = require("moonrover.lib.duration")

local _M = {}

local function find_option(options, name, short)
  for _, o in ipairs(options) do
    if (name and o.name == name) or (short and o.short == short) then
      return o
    end
  end
  return nil
end

local function set_value(values, o, text)
  if not o.arg then
    if text ~= nil then
      return nil, "option --" .. o.name .. " takes no value (given '" .. text .. "')"
    end
    values[o.name] = true
    return true
  end
  if text == nil then
    return nil, "option --" .. o.name .. " needs a value (" .. o.arg .. ")"
  end
  if o.convert then
    local v, err = o.convert(text)
    if v == nil then
      return nil, "invalid value for --" .. o.name .. ": " .. err
    end
    values[o.name] = v
  else
    values[o.name] = text
  end
  return true
end

-- Splits "--name=value", "--name", "-n" and "-nvalue" (perf's "-F99") into
-- an option and its inline value.
local function split(word)
  local name, inline = word:match("^%-%-([%w%-]+)=(.*)$")
  if name then
    return name, nil, inline
  end
  name = word:match("^%-%-([%w%-]+)$")
  if name then
    return name, nil, nil
  end
  local short, attached = word:match("^%-(%a)(.*)$")
  return nil, short, attached ~= "" and attached or nil
end

-- Walks argv as parse reads it, calling on_option(o, text, word) for each option
-- (nil when unknown) and on_positional(word) for each other word; every word
-- after `--` is positional. Stops at the first non-nil result of a callback.
local function walk(options, argv, on_option, on_positional)
  local i = 1
  while i <= #argv do
    local word = argv[i]
    local name, short, inline = split(word)
    local result
    if word == "--" then
      for j = i + 1, #argv do
        result = result or on_positional(argv[j])
      end
      return result
    elseif not name and not short then
      result = on_positional(word)
    else
      local o = find_option(options, name, short)
      local text = inline
      if o and o.arg and text == nil then
        i = i + 1
        text = argv[i]
      end
      result = on_option(o, text, word)
    end
    if result ~= nil then
      return result
    end
    i = i + 1
  end
  return nil
end

-- Returns values (with defaults filled in), the positional words and the set
-- of option names given on the command line, or nil and a one-line error.
function _M.parse(options, argv)
  local values, positional, given = {}, {}, {}
  local err = walk(options, argv, function(o, text, word)
    if not o then
      return "unknown option " .. word
    end
    local ok, why = set_value(values, o, text)
    given[o.name] = true
    return not ok and why or nil
  end, function(word)
    positional[#positional + 1] = word
  end)
  if err then
    return nil, err
  end
  for _, o in ipairs(options) do
    if values[o.name] == nil then
      values[o.name] = o.default
    end
  end
  return values, positional, given
end

-- Whether argv asks for help (-h or --help) where an option is expected: not
-- as the value of an option that takes one, nor after `--`.
function _M.wants_help(options, argv)
  return walk(options, argv, function(_, _, word)
    if word == "--help" or word == "-h" then
      return true
    end
  end, function() end) == true
end

-- Renders "usage" plus one aligned line (or more) per option, if any.
function _M.help(usage, summary, options)
  local lines = { "usage: " .. usage, "", summary }
  if #options > 0 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = "options:"
  end
  for _, o in ipairs(options) do
    local left = "  " .. (o.short and ("-" .. o.short .. ", ") or "    ") .. "--" .. o.name
    if o.arg then
      left = left .. " " .. o.arg
    end
    local help = o.help
    if o.default ~= nil and o.arg then
      help = help .. " (default: " .. tostring(o.default) .. ")"
    end
    if #left > 28 then
      lines[#lines + 1] = left
      left = ""
    end
    lines[#lines + 1] = left .. string.rep(" ", 30 - #left) .. help
  end
  return table.concat(lines, "\n") .. "\n"
end

-- Converters shared by commands.

function _M.int_range(lo, hi)
  return function(text)
    local n = tonumber(text)
    if not n or n ~= math.floor(n) or n < lo or n > hi then
      return nil, "'" .. text .. "' is not a whole number from " .. lo .. " to " .. hi
    end
    return n
  end
end

function _M.pid_list(text)
  local pids = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local n = tonumber(item)
    if not n or n ~= math.floor(n) or n <= 0 or n > 4194304 then
      return nil, "'" .. item .. "' is not a process id"
    end
    pids[#pids + 1] = n
  end
  return pids
end

-- A duration as people type it ("10", "5s", "2m", "250ms"; lib/duration.lua),
-- in seconds, more than zero.
function _M.duration(text)
  local seconds, err = duration.seconds(text)
  if not seconds then
    return nil, err
  end
  if seconds <= 0 then
    return nil, "'" .. text .. "' is not a duration above zero"
  end
  return seconds
end

-- One of choices, whatever its letter case ("SVG", "Folded"): the choice as
-- spelt in the list.
function _M.one_of(choices)
  return function(text)
    local lower = text:lower()
    for _, c in ipairs(choices) do
      if c:lower() == lower then
        return c
      end
    end
    return nil, "'" .. text .. "' is not one of " .. table.concat(choices, ", ")
  end
end

return _M
