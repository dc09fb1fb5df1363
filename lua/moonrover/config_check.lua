-- config_check.lua - checks a configuration against config_schema.lua, every
-- key at every depth, and collects every problem at once: an unknown key, a
-- list or mapping where a single value goes (and the reverse), a value of
-- the wrong type or out of its range, a value that starts like a
-- ${NAME:default} override but is not one, and the schema's checks across
-- keys. Each problem is one line naming the key's full path, the value and
-- what is expected. It also lists the keys a file sets that moonrover reads
-- but does not act on, one notice per key.
--
-- Values are those config.lua hands over: strings, YAML sequences (with
-- yaml.sequence as metatable) and mappings with lowercased keys.
local schema = require("moonrover.config_schema")
local values = require("moonrover.config_values")
local tables = require("moonrover.lib.tables")
local yaml = require("moonrover.lib.yaml")

local _M = {}

-- Most problems listed; the rest are counted (a file of a million unknown
-- keys gets a readable answer).
_M.MAX_PROBLEMS = 50

local function is_map(v)
  return type(v) == "table" and not yaml.is_sequence(v)
end

local sorted_keys = tables.sorted_keys

local function child(path, key)
  return path == "" and key or path .. "." .. key
end

local function item(path, i)
  return string.format("%s[%d]", path, i)
end

-- ---------------------------------------------------------------- scalars

local function range_text(node, show)
  if node.min and node.max then
    return string.format(" from %s to %s", show(node.min), show(node.max))
  elseif node.min then
    return string.format(" of at least %s", show(node.min))
  end
  return ""
end

local function bytes(n)
  return n == 1 and "1 byte" or string.format("%d bytes", n)
end

-- What a scalar node accepts, as a message says it.
local function expected(node)
  local t = node.type
  if t == "bool" then
    return "true or false"
  elseif t == "int" then
    return "a whole number" .. range_text(node, tostring)
  elseif t == "duration" then
    return "a duration" .. range_text(node, values.show_duration) .. " (such as 20s, 9ms or 1m30s)"
  elseif t == "size" then
    return "a size" .. range_text(node, bytes) .. " (such as 400KB or 1MiB)"
  elseif t == "enum" then
    return "one of " .. table.concat(node.values, ", ")
  elseif t == "address" then
    return "host:port with a port from 1 to 65535"
  elseif t == "listen" then
    return "host:port (port 0: any free one), or off"
  elseif t == "layer" then
    return "an OAP layer name in capitals (such as OS_LINUX or GENERAL)"
  elseif t == "csv" then
    return "a comma-separated text or a list of texts"
  end
  return node.nonempty and "a text that is not empty" or "a text"
end

local function in_range(node, v)
  return (not node.min or v >= node.min) and (not node.max or v <= node.max)
end

local function one_of(list, text)
  for _, v in ipairs(list) do
    if v:lower() == text:lower() then
      return true
    end
  end
  return false
end

local PARSERS = { bool = values.bool, int = values.int, duration = values.duration, size = values.size }

-- true when text is a valid value of the scalar node
local function scalar_ok(node, text)
  local t = node.type
  local parse = PARSERS[t]
  if parse then
    local v = parse(text)
    return v ~= nil and (type(v) ~= "number" or in_range(node, v))
  elseif t == "enum" then
    return one_of(node.values, text)
  elseif t == "address" then
    local _, port = values.host_port(text)
    return port ~= nil and port > 0
  elseif t == "listen" then
    return text == "" or text == "off" or values.host_port(text) ~= nil
  elseif t == "layer" then
    return text:find("^[A-Z][A-Z0-9_]*$") ~= nil
  end
  return not node.nonempty or text ~= ""
end

-- ---------------------------------------------------------------- the walk

local check

local function check_scalar(node, v, path, p)
  if node.type == "csv" and yaml.is_sequence(v) then
    for i = 1, table.maxn(v) do
      if type(v[i]) == "table" then
        p.report(item(path, i), v[i], "a single text")
      end
    end
  elseif type(v) == "table" then
    p.report(path, v, expected(node) .. " (a single value)")
  elseif v:sub(1, 2) == "${" then
    p.report(path, v, "a value, or a whole ${NAME:default} override (NAME in capitals, digits and _; the "
      .. "default may be empty)")
  elseif not scalar_ok(node, v) then
    p.report(path, v, expected(node))
  end
end

local function unknown_key(node, path, key, v, p)
  local where = path == "" and "the top level" or path
  p.report(child(path, key), v, where .. " has " .. table.concat(sorted_keys(node.fields), ", "), true)
end

local function check_map(node, v, path, p)
  if not is_map(v) then
    p.report(path, v, "a mapping with the keys " .. table.concat(sorted_keys(node.fields), ", "))
    return
  end
  for _, key in ipairs(sorted_keys(v)) do
    local sub = node.fields[key]
    if sub then
      check(sub, v[key], child(path, key), p)
    else
      unknown_key(node, path, key, v[key], p)
    end
  end
end

local function check_list(node, v, path, p)
  if not yaml.is_sequence(v) then
    p.report(path, v, "a list")
    return
  end
  for i = 1, table.maxn(v) do
    if v[i] == nil and node.item.type == "map" then
      p.report(item(path, i), v[i], "a mapping (this list item is empty)")
    else
      check(node.item, v[i], item(path, i), p)
    end
  end
end

-- checks value v (nil: absent) of node at path
check = function(node, v, path, p)
  if v == nil then
    return
  elseif node.type == "map" then
    check_map(node, v, path, p)
  elseif node.type == "list" then
    check_list(node, v, path, p)
  else
    check_scalar(node, v, path, p)
  end
end

-- true when a problem was reported at path or under it
local function troubled(p, path)
  for _, at in ipairs(p.paths) do
    if at == path or at:sub(1, #path + 1) == path .. "." or at:sub(1, #path + 1) == path .. "[" then
      return true
    end
  end
  return false
end

-- runs the schema's checks across keys on the merged configuration
local function check_across(node, v, path, p, env)
  if not is_map(v) or node.type ~= "map" then
    return
  end
  for key, sub in pairs(node.fields) do
    check_across(sub, v[key], child(path, key), p, env)
  end
  if node.check and not troubled(p, path) then
    node.check(v, path, p.report, env)
  end
end

local function problems()
  local p = { lines = {}, paths = {}, more = 0 }
  function p.report(path, v, what, unknown)
    p.paths[#p.paths + 1] = path
    if #p.lines >= _M.MAX_PROBLEMS then
      p.more = p.more + 1
      return
    end
    local line = unknown and string.format("%s: unknown key (its value: %s); %s", path, values.show(v), what)
      or string.format("%s is %s: expected %s", path, values.show(v), what)
    p.lines[#p.lines + 1] = line
  end
  return p
end

-- Checks file (the normalized file, lowercased keys) and then, across keys,
-- cfg (the defaults with the file merged over them). env: see
-- config_schema.lua (regex and file may be absent). Returns a list of
-- problem lines (empty when all is well); past MAX_PROBLEMS the last line
-- says how many more there are.
function _M.check(file, cfg, env)
  local p = problems()
  check(schema.root, file, "", p)
  local across = { bool = values.bool, regex = env and env.regex, file = env and env.file }
  check_across(schema.root, cfg, "", p, across)
  if p.more > 0 then
    p.lines[#p.lines + 1] = string.format("... and %d more problem(s)", p.more)
  end
  return p.lines
end

-- ---------------------------------------------------------------- notices

local function unused_reason(node, v, inherited)
  if type(node.unused) == "function" then
    return type(v) == "string" and node.unused(v) or nil
  end
  return node.unused or inherited
end

local function collect_notices(node, v, path, inherited, out)
  if v == nil then
    return
  end
  local reason = unused_reason(node, v, inherited)
  if node.type == "map" and is_map(v) then
    for _, key in ipairs(sorted_keys(v)) do
      if node.fields[key] then
        collect_notices(node.fields[key], v[key], child(path, key), reason, out)
      end
    end
  elseif node.type == "list" and not reason and yaml.is_sequence(v) then
    for i = 1, table.maxn(v) do
      collect_notices(node.item, v[i], item(path, i), nil, out)
    end
  elseif reason then
    out[#out + 1] = { path = path, reason = reason }
  end
end

-- the dotted prefix all paths share ("" when none)
local function common_prefix(paths)
  local prefix = paths[1]:match("^(.*)%.") or ""
  for _, path in ipairs(paths) do
    while prefix ~= "" and path:sub(1, #prefix + 1) ~= prefix .. "." do
      prefix = prefix:match("^(.*)%.") or ""
    end
  end
  return prefix
end

-- "access_log: active, flush.period" for paths under one key
local function key_list(paths)
  if #paths == 1 then
    return paths[1] .. " is"
  end
  local prefix = common_prefix(paths)
  local short = {}
  for i, path in ipairs(paths) do
    short[i] = prefix == "" and path or path:sub(#prefix + 2)
  end
  return (prefix == "" and "" or prefix .. ": ") .. table.concat(short, ", ") .. " are"
end

-- The keys file (a checked, normalized file) sets that moonrover reads and
-- checks but does not act on: one line per reason, naming every such key.
function _M.notices(file)
  local found, order, by_reason = {}, {}, {}
  collect_notices(schema.root, file, "", nil, found)
  for _, f in ipairs(found) do
    if not by_reason[f.reason] then
      by_reason[f.reason] = {}
      order[#order + 1] = f.reason
    end
    table.insert(by_reason[f.reason], f.path)
  end
  local out = {}
  for i, reason in ipairs(order) do
    out[i] = string.format("%s read and checked but not acted on: %s", key_list(by_reason[reason]), reason)
  end
  return out
end

-- ---------------------------------------------------------------- defaults

-- value (plain tables) with its lists marked as YAML sequences, as the schema says
local function as_yaml(node, v)
  if type(v) ~= "table" then
    return v
  elseif node.type == "list" then
    for i = 1, table.maxn(v) do
      v[i] = as_yaml(node.item, v[i])
    end
    return setmetatable(v, yaml.sequence)
  end
  for key, sub in pairs(node.fields or {}) do
    v[key] = as_yaml(sub, v[key])
  end
  return v
end

local function default_of(node)
  if node.type == "map" then
    local out, any = {}, false
    for key, sub in pairs(node.fields) do
      out[key] = default_of(sub)
      any = any or out[key] ~= nil
    end
    return any and out or nil
  elseif node.type == "list" then
    return node.default and as_yaml(node, node.default()) or nil
  end
  return node.default
end

-- A fresh table of every key that has a default, with it (Rover's for
-- Rover's keys), as a loaded file would hold it.
function _M.defaults()
  return default_of(schema.root)
end

return _M
