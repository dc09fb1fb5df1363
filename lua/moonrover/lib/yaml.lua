-- yaml.lua - reads configuration files with libyaml (libyaml-0.so.2, through
-- LuaJIT's FFI; the one place Lua declares libyaml) and builds Lua values from
-- its events with the rules moonrover's configuration wants.
--
-- Why the FFI and not lyaml (Debian's lua-yaml): config.lua also runs inside
-- agent scripts, whose states load no C modules (package.cpath is "") but
-- have the FFI. Through the FFI one module serves the CLI, specs and scripts
-- alike, and no parsed configuration has to be handed across states. In a
-- script every libyaml call is bracketed by rt.guard, so the time budget's
-- interrupt never lands inside libyaml (or its malloc).
--
-- Every scalar stays a string ("true", "10" and "20s" included): typing is the
-- caller's job, as in Rover. Only plain null, Null, NULL, ~ and empty values
-- become nil. Sequences carry the metatable _M.sequence so that an empty list
-- can be told from an empty mapping. Anchors, aliases, tags, keys that are not
-- single values, duplicate keys and a second document are refused. parse never
-- raises: it returns the value, or nil and "source:line: message" (a plain nil
-- with no message is an empty document).
local ffi = require("ffi")
local rt = require("moonrover.rt")

local _M = {}

-- the metatable of every sequence parse returns (see is_sequence)
_M.sequence = {}

-- The layout of yaml.h in libyaml 0.2 (the soname pins it). Only the error
-- fields of the parser are read; the rest is declared to give it its size.
ffi.cdef([[
typedef struct { size_t index, line, column; } yaml_mark_t;

typedef struct {
  int type;
  union {
    struct { int encoding; } stream_start;
    struct { void *version_directive, *tag_directives[2]; int implicit; } document_start;
    struct { unsigned char *anchor; } alias;
    struct {
      unsigned char *anchor, *tag, *value;
      size_t length;
      int plain_implicit, quoted_implicit, style;
    } scalar;
    struct { unsigned char *anchor, *tag; int implicit, style; } collection_start;
  } data;
  yaml_mark_t start_mark, end_mark;
} yaml_event_t;

typedef struct {
  int error;
  const char *problem;
  size_t problem_offset;
  int problem_value;
  yaml_mark_t problem_mark;
  const char *context;
  yaml_mark_t context_mark;
  void *read_handler, *read_handler_data, *input[3];
  int eof;
  void *buffer[4];
  size_t unread;
  void *raw_buffer[4];
  int encoding;
  size_t offset;
  yaml_mark_t mark;
  int stream_start_produced, stream_end_produced, flow_level;
  void *tokens[4];
  size_t tokens_parsed;
  int token_available;
  void *indents[3];
  int indent, simple_key_allowed;
  void *simple_keys[3], *states[3];
  int state;
  void *marks[3], *tag_directives[3], *aliases[3], *document;
} yaml_parser_t;

int yaml_parser_initialize(yaml_parser_t *parser);
void yaml_parser_delete(yaml_parser_t *parser);
void yaml_parser_set_input_string(yaml_parser_t *parser, const char *input, size_t size);
int yaml_parser_parse(yaml_parser_t *parser, yaml_event_t *event);
void yaml_event_delete(yaml_event_t *event);
]])

local lib = rt.guard(ffi.load("libyaml-0.so.2"))

-- yaml_event_type_t, yaml_scalar_style_t and yaml_error_type_t values
local STREAM_END, DOCUMENT_START = 2, 3
local ALIAS, SCALAR, SEQUENCE_START, SEQUENCE_END, MAPPING_START, MAPPING_END = 5, 6, 7, 8, 9, 10
local PLAIN = 1
local MEMORY_ERROR, READER_ERROR = 1, 2

local MAX_DEPTH = 200

local NULLS = { [""] = true, ["~"] = true, null = true, Null = true, NULL = true }

function _M.is_sequence(v)
  return type(v) == "table" and getmetatable(v) == _M.sequence
end

local function fail(line, msg)
  error({ line = line, msg = msg }, 0)
end

-- text with its line breaks ("\r\n", "\r", "\n") made "\n"
local function unix_breaks(text)
  return (text:gsub("\r\n?", "\n"))
end

-- the text's lines (a final line break starts no new line)
local function lines_of(text)
  local lines = {}
  for raw in (unix_breaks(text) .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = raw
  end
  if #lines > 1 and lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

-- the line of byte offset (from 0) in text
local function line_of_offset(text, offset)
  local _, breaks = unix_breaks(text:sub(1, offset)):gsub("\n", "")
  return breaks + 1
end

-- true when column (from 0) of the line is in its indentation and that has a tab
local function in_tab_indent(line, column)
  local lead = line:match("^[ \t]*")
  return column < #lead and lead:find("\t") ~= nil
end

-- the line (from 1) of a libyaml mark; a mark at the end of the text is put
-- on its last line, not on the one libyaml adds after it
local function mark_line(mark, lines)
  return math.max(1, math.min(tonumber(mark.line) + 1, #lines))
end

-- libyaml's problem and, when it has one, what it was reading
local function describe(p, line, lines)
  local problem = p.problem ~= nil and ffi.string(p.problem) or "invalid YAML"
  if p.context == nil then
    return problem
  end
  local context, start = ffi.string(p.context), mark_line(p.context_mark, lines)
  if start == line then
    return problem .. " " .. context
  end
  return string.format("%s %s that starts at line %d", problem, context, start)
end

-- the line and message of the error libyaml reported
local function parser_error(r)
  local p = r.parser
  if p.error == MEMORY_ERROR then
    return 1, "out of memory"
  elseif p.error == READER_ERROR then
    local value = p.problem_value >= 0 and string.format(" (0x%02X)", p.problem_value) or ""
    return line_of_offset(r.text, tonumber(p.problem_offset)), ffi.string(p.problem) .. value
  end
  local lines = lines_of(r.text)
  local line = mark_line(p.problem_mark, lines)
  if in_tab_indent(lines[line] or "", tonumber(p.problem_mark.column)) then
    return line, "tab character in indentation (indent with spaces)"
  end
  return line, describe(p, line, lines)
end

-- what the builder needs of the event in r.event
local function copy_event(ev)
  local out = { type = tonumber(ev.type), line = tonumber(ev.start_mark.line) + 1 }
  if out.type == SCALAR then
    local s = ev.data.scalar
    out.value = ffi.string(s.value, s.length)
    out.plain = s.style == PLAIN
    out.anchor, out.tag = s.anchor ~= nil, s.tag ~= nil
  elseif out.type == SEQUENCE_START or out.type == MAPPING_START then
    local c = ev.data.collection_start
    out.anchor, out.tag = c.anchor ~= nil, c.tag ~= nil
  end
  return out
end

-- the next event as a plain table (libyaml's copy is freed at once)
local function next_event(r)
  if lib.yaml_parser_parse(r.parser, r.event) == 0 then
    fail(parser_error(r))
  end
  local out = copy_event(r.event)
  lib.yaml_event_delete(r.event)
  return out
end

-- refuses what this module does not support on a node
local function check_node(ev)
  if ev.type == ALIAS then
    fail(ev.line, "aliases (*) are not supported")
  elseif ev.anchor then
    fail(ev.line, "anchors (&) are not supported")
  elseif ev.tag then
    fail(ev.line, "tags (!) are not supported")
  end
end

local build

local function build_sequence(r, depth)
  local list, n = setmetatable({}, _M.sequence), 0
  while true do
    local ev = next_event(r)
    if ev.type == SEQUENCE_END then
      return list
    end
    n = n + 1
    list[n] = build(r, ev, depth)
  end
end

local function mapping_key(ev)
  check_node(ev)
  if ev.type ~= SCALAR then
    fail(ev.line, "a mapping key must be a single value, not a list or a mapping")
  elseif ev.plain and ev.value == "" then
    fail(ev.line, "a mapping key is missing")
  end
  return ev.value
end

local function build_mapping(r, depth)
  local map, seen = {}, {}
  while true do
    local ev = next_event(r)
    if ev.type == MAPPING_END then
      return map
    end
    local key = mapping_key(ev)
    if seen[key] then
      fail(ev.line, string.format('duplicate key "%s" (first at line %d)', key, seen[key]))
    end
    seen[key] = ev.line
    map[key] = build(r, next_event(r), depth)
  end
end

-- the value of the node that starts with event ev
build = function(r, ev, depth)
  check_node(ev)
  if ev.type == SCALAR then
    if ev.plain and NULLS[ev.value] then
      return nil
    end
    return ev.value
  elseif depth >= MAX_DEPTH then
    fail(ev.line, "nesting too deep")
  elseif ev.type == SEQUENCE_START then
    return build_sequence(r, depth + 1)
  end
  return build_mapping(r, depth + 1)
end

-- the stream's only document (nil when there is none)
local function build_stream(r)
  next_event(r)
  if next_event(r).type == STREAM_END then
    return nil
  end
  local value = build(r, next_event(r), 0)
  next_event(r)
  local ev = next_event(r)
  if ev.type == DOCUMENT_START then
    fail(ev.line, "only one YAML document is supported")
  end
  return value
end

local function parse_text(text)
  local r = { text = text, parser = ffi.new("yaml_parser_t"), event = ffi.new("yaml_event_t") }
  if lib.yaml_parser_initialize(r.parser) == 0 then
    return false, { line = 1, msg = "out of memory" }
  end
  lib.yaml_parser_set_input_string(r.parser, text, #text)
  local ok, result = pcall(build_stream, r)
  lib.yaml_parser_delete(r.parser)
  return ok, result
end

-- text: the YAML; source_name: what error messages call it (a file name)
function _M.parse(text, source_name)
  source_name = source_name or "<yaml>"
  if type(text) ~= "string" then
    return nil, source_name .. ":1: expected YAML text, got " .. type(text)
  end
  local ok, result = parse_text(text)
  if ok then
    return result
  elseif type(result) == "table" then
    return nil, string.format("%s:%d: %s", source_name, result.line, result.msg)
  end
  return nil, string.format("%s:1: internal parser error: %s", source_name, tostring(result))
end

return _M
