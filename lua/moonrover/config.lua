-- config.lua - moonrover's configuration: Rover's rover_configs.yaml (same keys,
-- same ${ENV:default} overrides, case-insensitive keys) plus moonrover's own
-- `agent` section, every key checked (config_check.lua, against
-- config_schema.lua), merged over built-in defaults, and typed accessors that
-- convert the string values the way Rover's viper + mapstructure weak typing do.
--
-- Error style: no function here raises. read, load and load_text return the
-- value, or nil and a message (for a file with problems: every problem, one
-- per line). Every accessor returns the value, or nil and a message, and its
-- `default` argument when the key is absent or null (so nil without a message
-- means "absent, no default"). Keys are dotted paths ("core.backend.addr"),
-- matched without regard to case; a number selects a list item
-- ("...analyzers.1.layer"). Only read, load and runtime_checks use the
-- runtime (rt); the rest is pure.
local check = require("moonrover.config_check")
local rt = require("moonrover.rt")
local values = require("moonrover.config_values")
local yaml = require("moonrover.lib.yaml")

local _M = {}

-- The largest configuration file read (a real one is a few kilobytes).
_M.MAX_BYTES = 4 * 1024 * 1024

local SECTIONS = "agent, access_log, core, logger, pprof, process_discovery, profiling"

-- the top-level sections each loaded config had in its file, and the
-- notices about its keys (weak keys)
local sections_of = setmetatable({}, { __mode = "k" })
local notices_of = setmetatable({}, { __mode = "k" })

-- A fresh table of every key with its built-in default, as the strings a YAML
-- file would hold (Rover's defaults, plus moonrover's `agent` section).
function _M.defaults()
  return check.defaults()
end

local function is_map(v)
  return type(v) == "table" and not yaml.is_sequence(v)
end

local function join(prefix, key)
  return prefix == "" and tostring(key) or prefix .. "." .. tostring(key)
end

-- Rover's override: a string that is entirely ${NAME:default} becomes the
-- variable's value when it is set and not empty, else the default (greedy up
-- to the last "}"; like Go's ".", the default cannot span a line break)
local function override(s, getenv)
  if s:find("\n", 1, true) then
    return s
  end
  local name, default = s:match("^%${([_A-Z0-9]+):(.*)}$")
  if not name then
    return s
  end
  local value = getenv(name)
  if value == nil or value == "" then
    return default
  end
  return value
end

local normalize

local function normalize_map(map, getenv, where, problems)
  local out, seen = {}, {}
  local keys = {}
  for key in pairs(map) do
    keys[#keys + 1] = key
  end
  table.sort(keys)
  for _, key in ipairs(keys) do
    local lower = key:lower()
    if seen[lower] then
      problems[#problems + 1] = string.format('%s is given twice (as "%s" and "%s"): expected one of them '
        .. "(keys are case-insensitive)", join(where, lower), seen[lower], key)
    else
      seen[lower] = key
      out[lower] = normalize(map[key], getenv, join(where, lower), problems)
    end
  end
  return out
end

local function normalize_list(list, getenv, where, problems)
  local out = setmetatable({}, yaml.sequence)
  for index, value in pairs(list) do
    out[index] = normalize(value, getenv, join(where, index), problems)
  end
  return out
end

-- a copy of a parsed value with keys lowercased and overrides applied to
-- every string at any depth; keys given twice are added to problems
normalize = function(value, getenv, where, problems)
  if type(value) == "string" then
    return override(value, getenv)
  elseif yaml.is_sequence(value) then
    return normalize_list(value, getenv, where, problems)
  elseif type(value) == "table" then
    return normalize_map(value, getenv, where, problems)
  end
  return value
end

-- Deep merge of maps: values from `over` replace those in `base` (lists
-- too). A key whose shape is wrong (a single value where a mapping goes)
-- keeps its default: the check has reported it already.
local function merge(base, over)
  for key, value in pairs(over) do
    local current = base[key]
    if is_map(current) and is_map(value) then
      merge(current, value)
    elseif not is_map(current) then
      base[key] = value
    end
  end
end

-- The text of a file, read once: only a regular file (links are followed)
-- of at most max bytes (default MAX_BYTES). Returns the text or nil, why.
function _M.read(path, max)
  if type(path) ~= "string" then
    return nil, "cannot read the configuration: no file name given"
  end
  max = max or _M.MAX_BYTES
  local buf = rt.ffi.new("char[?]", max)
  local n, err = rt.call(rt.lib.mr_text_file_read, path, buf, max)
  if not n then
    return nil, err
  end
  return rt.ffi.string(buf, tonumber(n))
end

local PEM_MAX = 1024 * 1024

-- The checks that need the runtime, for load_text's opts.checks: a
-- regular expression compiles (POSIX extended, as the rules use), a file
-- can be read. The runtime is loaded only when one of them runs.
function _M.runtime_checks()
  return {
    regex = function(pattern)
      local re, err = rt.call(rt.lib.mr_regex_new, pattern)
      if re then
        rt.lib.mr_regex_free(re)
      end
      return re ~= nil, err
    end,
    file = function(path)
      local text, err = _M.read(path, PEM_MAX)
      return text ~= nil, err
    end,
  }
end

-- path: the YAML file; opts as load_text's, with the runtime's checks unless
-- opts.checks says otherwise. Returns the configuration and the file's text,
-- or nil and the problems (see load_text).
function _M.load(path, opts)
  local text, err = _M.read(path)
  if not text then
    return nil, err
  end
  opts = opts or {}
  local cfg
  cfg, err = _M.load_text(text, path, { getenv = opts.getenv, checks = opts.checks or _M.runtime_checks() })
  if not cfg then
    return nil, err
  end
  return cfg, text
end

local function with_name(path, lines)
  local out = {}
  for i, line in ipairs(lines) do
    out[i] = path .. ": " .. line
  end
  return table.concat(out, "\n")
end

-- The configuration in text (the file path names it in messages): the
-- defaults with the file merged over them, every key checked. opts.getenv:
-- the environment lookup (os.getenv by default); opts.checks: the checks
-- that need the runtime (runtime_checks()), skipped when absent. Returns the
-- configuration, or nil and every problem, one per line, each starting with
-- path (a YAML syntax error is one line with path and line number).
function _M.load_text(text, path, opts)
  local getenv = opts and opts.getenv or os.getenv
  local doc, perr = yaml.parse(text, path)
  if perr then
    return nil, perr
  end
  local problems = {}
  local file = doc == nil and {} or normalize(doc, getenv, "", problems)
  if not is_map(file) then
    return nil, with_name(path, { "the top level is " .. values.show(file) .. ": expected a mapping of sections ("
      .. SECTIONS .. ")" })
  end
  local cfg = _M.defaults()
  merge(cfg, file)
  for _, line in ipairs(check.check(file, cfg, opts and opts.checks)) do
    problems[#problems + 1] = line
  end
  if #problems > 0 then
    return nil, with_name(path, problems)
  end
  local present = {}
  for key in pairs(file) do
    present[key] = true
  end
  sections_of[cfg] = present
  notices_of[cfg] = check.notices(file)
  return cfg
end

-- One line per key the loaded file sets that moonrover reads and checks but
-- does not act on, saying why (empty for the defaults).
function _M.notices(cfg)
  return notices_of[cfg] or {}
end

-- true when the loaded file had the top-level section (a Rover module runs
-- only when its section is present; defaults alone do not start it)
function _M.has_section(cfg, name)
  local present = sections_of[cfg]
  return present ~= nil and present[name:lower()] == true
end

local function lookup(cfg, key)
  local node = cfg
  for part in key:gmatch("[^.]+") do
    if type(node) ~= "table" then
      return nil
    end
    if yaml.is_sequence(node) then
      node = node[tonumber(part)]
    else
      node = node[part:lower()]
    end
  end
  return node
end

-- Reads several typed values at once: fields is a list of { name, key,
-- accessor } (accessor: one of the get_ functions). Returns { name = value },
-- or nil and the first problem.
function _M.read_fields(cfg, fields)
  local out = {}
  for _, f in ipairs(fields) do
    local v, err = f[3](cfg, f[2])
    if err then
      return nil, err
    end
    out[f[1]] = v
  end
  return out
end

-- the raw value at key (a string, a list or a mapping), or default
function _M.get(cfg, key, default)
  local value = lookup(cfg, key)
  if value == nil then
    return default
  end
  return value
end

local function kind_of(value)
  return yaml.is_sequence(value) and "a list" or "a mapping"
end

-- the value at key as a string (numbers and booleans are converted); nil when
-- absent; nil, message for a list or mapping
local function scalar(cfg, key)
  local value = lookup(cfg, key)
  if type(value) == "table" then
    return nil, string.format("%s: expected a single value, found %s", key:lower(), kind_of(value))
  elseif value ~= nil then
    return tostring(value)
  end
end

local function bad_value(key, value, what)
  return nil, string.format('%s: "%s" is not %s', key:lower(), value, what)
end

-- applies convert(text) to the scalar at key; default when absent
local function typed(cfg, key, default, what, convert)
  local text, err = scalar(cfg, key)
  if err then
    return nil, err
  elseif text == nil then
    return default
  end
  local value = convert(text)
  if value == nil then
    return bad_value(key, text, what)
  end
  return value
end

local function identity(text)
  return text
end

function _M.get_string(cfg, key, default)
  return typed(cfg, key, default, "a string", identity)
end

function _M.get_bool(cfg, key, default)
  return typed(cfg, key, default, "a boolean", values.bool)
end

function _M.get_int(cfg, key, default)
  return typed(cfg, key, default, "an integer", values.int)
end

-- opts.plain_seconds: also accept a bare integer as a number of seconds
function _M.get_duration(cfg, key, default, opts)
  local plain = opts and opts.plain_seconds
  return typed(cfg, key, default, "a duration (like 20s, 9ms, 1m30s)", function(text)
    if plain and text:find("^%d+$") then
      return tonumber(text)
    end
    return values.duration(text)
  end)
end

-- a size in bytes
function _M.get_size(cfg, key, default)
  return typed(cfg, key, default, "a size (like 400KB, 1MiB, 512)", values.size)
end

local function split_commas(text)
  local list = {}
  for piece in (text .. ","):gmatch("([^,]*),") do
    local item = piece:match("^%s*(.-)%s*$")
    if item ~= "" then
      list[#list + 1] = item
    end
  end
  return list
end

-- a list of strings: a YAML list, or a comma-separated string (trimmed, empty
-- items dropped), as Rover's namespace keys take
function _M.get_list(cfg, key, default)
  local value = lookup(cfg, key)
  if value == nil then
    return default
  elseif type(value) ~= "table" then
    return split_commas(tostring(value))
  elseif not yaml.is_sequence(value) then
    return nil, key:lower() .. ": expected a list, found a mapping"
  end
  local list = {}
  for i = 1, table.maxn(value) do
    local item = value[i]
    if type(item) == "table" then
      return nil, string.format("%s: item %d is %s, not a single value", key:lower(), i, kind_of(item))
    end
    list[i] = item == nil and "" or tostring(item)
  end
  return list
end

return _M
