-- yaml.lua - parses the subset of YAML that configuration files use (Rover's
-- rover_configs.yaml and moonrover's own): block mappings and sequences, plain,
-- quoted and block ("|", ">") scalars, one-line flow collections, comments.
--
-- Every scalar stays a string ("true", "10" and "20s" included): typing is the
-- caller's job, as in Rover. Only null, Null, NULL, ~ and empty plain values
-- become nil. Sequences carry the metatable _M.sequence so that an empty list
-- can be told from an empty mapping. Anchors, aliases, tags, complex keys,
-- multi-line flow collections and multiple documents are rejected with a
-- message. parse never raises: it returns the value, or nil and
-- "source:line: message" (a plain nil with no message is an empty document).
local _M = {}

-- the metatable of every sequence parse returns (see is_sequence)
_M.sequence = {}

local MAX_DEPTH = 200

local NULLS = { [""] = true, ["~"] = true, null = true, Null = true, NULL = true }

local START_ERRORS = {
  ["&"] = "anchors (&) are not supported",
  ["*"] = "aliases (*) are not supported",
  ["!"] = "tags (!) are not supported",
  ["%"] = "'%' cannot start a value (directives are not supported here)",
  ["@"] = "'@' is reserved and cannot start a plain value",
  ["`"] = "'`' is reserved and cannot start a plain value",
  [","] = "unexpected ','",
  ["]"] = "unexpected ']'",
  ["}"] = "unexpected '}'",
}

local ESCAPES = {
  ["0"] = "\0", a = "\a", b = "\b", t = "\t", ["\t"] = "\t", n = "\n", v = "\v",
  f = "\f", r = "\r", e = "\27", [" "] = " ", ['"'] = '"', ["/"] = "/", ["\\"] = "\\",
  N = "\194\133", _ = "\194\160", L = "\226\128\168", P = "\226\128\169",
}

local HEX_DIGITS = { x = 2, u = 4, U = 8 }

local function fail(line, msg)
  error({ line = line, msg = msg }, 0)
end

function _M.is_sequence(v)
  return type(v) == "table" and getmetatable(v) == _M.sequence
end

local function new_sequence()
  return setmetatable({}, _M.sequence)
end

local function is_blank(text)
  return text:find("^[ \t]*$") ~= nil or text:find("^[ \t]*#") ~= nil
end

local function is_seq_item(text)
  return text == "-" or text:find("^%-[ \t]") ~= nil
end

-- errors for a value or key that starts with a character this subset rejects
local function check_start(text, line)
  local c = text:sub(1, 1)
  if START_ERRORS[c] then
    fail(line, START_ERRORS[c])
  end
  local second = text:sub(2, 2)
  if c == "?" and (second == "" or second:find("[ \t]")) then
    fail(line, "complex mapping keys (?) are not supported")
  end
  if c == ":" and (second == "" or second:find("[ \t]")) then
    fail(line, "unexpected ':' (missing key?)")
  end
end

-- UTF-8 bytes of a code point
local function utf8_char(cp, line)
  if cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then
    fail(line, string.format("invalid code point U+%X in escape", cp))
  end
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40,
      0x80 + cp % 0x40)
  end
  return string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

-- \x, \u, \U escapes; a \u high surrogate followed by a \u low surrogate is joined
local function hex_escape(s, at, c, line)
  local n = HEX_DIGITS[c]
  local digits = s:sub(at + 1, at + n)
  if not digits:find("^%x+$") or #digits ~= n then
    fail(line, "invalid \\" .. c .. " escape: expected " .. n .. " hex digits")
  end
  local cp, nxt = tonumber(digits, 16), at + n + 1
  local low = c == "u" and s:match("^\\u(%x%x%x%x)", nxt)
  if cp >= 0xD800 and cp <= 0xDBFF and low then
    local lo = tonumber(low, 16)
    if lo >= 0xDC00 and lo <= 0xDFFF then
      return utf8_char(0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00), line), nxt + 6
    end
  end
  return utf8_char(cp, line), nxt
end

-- the escape whose letter c is at s[at]; returns its text and the next position
local function unescape(s, at, c, line)
  if ESCAPES[c] then
    return ESCAPES[c], at + 1
  elseif HEX_DIGITS[c] then
    return hex_escape(s, at, c, line)
  end
  fail(line, "invalid escape '\\" .. c .. "' in double-quoted scalar")
end

-- scans a double-quoted piece of line s from pos; returns its text, the position
-- after the closing quote (nil if not closed here), and whether the line ended
-- with an escaped line break
local function scan_double(s, pos, line)
  local out = {}
  while true do
    local a = s:find('["\\]', pos)
    if not a then
      out[#out + 1] = s:sub(pos)
      return table.concat(out), nil, false
    end
    out[#out + 1] = s:sub(pos, a - 1)
    if s:sub(a, a) == '"' then
      return table.concat(out), a + 1, false
    end
    local c = s:sub(a + 1, a + 1)
    if c == "" then
      return table.concat(out), nil, true
    end
    out[#out + 1], pos = unescape(s, a + 1, c, line)
  end
end

-- same for a single-quoted piece ('' is a quote)
local function scan_single(s, pos)
  local out = {}
  while true do
    local a = s:find("'", pos, true)
    if not a then
      out[#out + 1] = s:sub(pos)
      return table.concat(out), nil, false
    end
    out[#out + 1] = s:sub(pos, a - 1)
    if s:sub(a + 1, a + 1) ~= "'" then
      return table.concat(out), a + 1, false
    end
    out[#out + 1] = "'"
    pos = a + 2
  end
end

local function scan_piece(quote, s, pos, line)
  if quote == '"' then
    return scan_double(s, pos, line)
  end
  return scan_single(s, pos)
end

-- a quoted scalar that must close on this line: value and the position after it
local function quoted_on_line(s, pos, line)
  local value, close = scan_piece(s:sub(pos, pos), s, pos + 1, line)
  return value, close
end

-- the separator that folding puts between two lines of a flow scalar
local function fold_break(empties, escaped)
  if empties > 0 then
    return ("\n"):rep(empties)
  end
  return escaped and "" or " "
end

-- a quoted scalar starting at s (its first character is the quote) on line i,
-- continued on following lines until it closes; returns the value, the text
-- after the closing quote and the line where it closed
local function scan_quoted(p, i, s)
  local quote = s:sub(1, 1)
  local parts, li, pos = {}, i, 2
  local text = s:gsub("[ \t]+$", "")
  while true do
    local piece, close, escaped = scan_piece(quote, text, pos, li)
    parts[#parts + 1] = piece
    if close then
      return table.concat(parts), text:sub(close), li
    end
    local empties = 0
    li = li + 1
    while li <= p.n and p.raw[li]:find("^[ \t]*$") do
      empties, li = empties + 1, li + 1
    end
    if li > p.n then
      fail(i, "unterminated quoted scalar")
    end
    parts[#parts + 1] = fold_break(empties, escaped)
    text, pos = p.raw[li]:gsub("^[ \t]+", ""):gsub("[ \t]+$", ""), 1
  end
end

-- indentation and text of line i (a "- " item may have replaced its start)
local function line_at(p, i)
  local v = p.virt[i]
  if v then
    return v.indent, v.text
  end
  local raw = p.raw[i]
  local indent = #raw:match("^ *")
  return indent, raw:sub(indent + 1)
end

-- moves p.i to the next line holding content; returns its index, indent and text
local function peek(p)
  while p.i <= p.n do
    local indent, text = line_at(p, p.i)
    if not is_blank(text) then
      if text:find("^\t") then
        fail(p.i, "tab character in indentation (indent with spaces)")
      end
      return p.i, indent, text
    end
    p.i = p.i + 1
  end
end

-- "key:" at the start of text: returns the key and the rest of the line after
-- the colon, or nil when text is not a mapping entry
local function mapping_key(text, line)
  local c = text:sub(1, 1)
  if c == '"' or c == "'" then
    local key, close = quoted_on_line(text, 1, line)
    local after = close and text:sub(close) or ""
    if after:find("^[ \t]*:$") then
      return key, ""
    end
    local rest = after:match("^[ \t]*:[ \t]+(.*)$")
    if not rest then
      return nil
    end
    return key, rest
  end
  if c == "[" or c == "{" or c == "|" or c == ">" or is_seq_item(text) then
    return nil
  end
  local colon = text:find(":[ \t]") or text:find(":$")
  local comment = text:find("[ \t]#")
  if not colon or colon == 1 or (comment and comment < colon) then
    return nil
  end
  check_start(text, line)
  local key = text:sub(1, colon - 1):gsub("[ \t]+$", "")
  return key, (text:sub(colon + 1):gsub("^[ \t]+", ""))
end

-- plain text on one line: the comment is cut off, the rest trimmed; the second
-- result tells whether a comment ended the line
local function plain_text(s, line)
  local cut = s:find("[ \t]#")
  if cut then
    s = s:sub(1, cut - 1)
  end
  s = s:gsub("[ \t]+$", "")
  if s:find(":[ \t]") or s:find(":$") then
    fail(line, "mapping values are not allowed here (a ': ' inside a plain value; quote it)")
  end
  return s, cut ~= nil
end

-- a plain scalar starting with s on line i, folded with the following lines that
-- are indented more than parent
local function parse_plain(p, i, parent, s)
  local first, ended = plain_text(s, i)
  local parts, j, empties = { first }, i + 1, 0
  p.i = i + 1
  while not ended and j <= p.n do
    local raw = p.raw[j]
    local indent = #raw:match("^ *")
    if raw:find("^[ \t]*$") then
      empties = empties + 1
    elseif indent <= parent or raw:find("^[ \t]*#") then
      break
    else
      local text = raw:gsub("^[ \t]+", "")
      if mapping_key(text, j) then
        fail(j, "bad indentation: a key indented under the value of the line above")
      end
      text, ended = plain_text(text, j)
      parts[#parts + 1] = fold_break(empties, false)
      parts[#parts + 1] = text
      empties, p.i = 0, j + 1
    end
    j = j + 1
  end
  if #parts == 1 and NULLS[first] then
    return nil
  end
  return table.concat(parts)
end

-- body of a ">" block scalar: lines joined with spaces, except around empty
-- and more-indented lines, whose line breaks are kept
local function fold_lines(lines, last)
  local out, prev, empties = {}, nil, 0
  for k = 1, last do
    local line = lines[k]
    if line == "" then
      empties = empties + 1
    else
      local kind = line:find("^[ \t]") and "more" or "normal"
      if prev == nil then
        out[#out + 1] = ("\n"):rep(empties)
      elseif prev == "normal" and kind == "normal" then
        out[#out + 1] = fold_break(empties, false)
      else
        out[#out + 1] = ("\n"):rep(empties + 1)
      end
      out[#out + 1] = line
      prev, empties = kind, 0
    end
  end
  return table.concat(out)
end

-- the lines of a block scalar after its header on line i; returns them without
-- their indentation
local function block_lines(p, i, parent, indent)
  local lines, j = {}, i + 1
  while j <= p.n do
    local raw = p.raw[j]
    local spaces = #raw:match("^ *")
    if raw:find("^ *$") then
      lines[#lines + 1] = indent and raw:sub(indent + 1) or ""
    else
      indent = indent or (spaces > parent and spaces)
      if not indent or spaces < indent then
        break
      end
      lines[#lines + 1] = raw:sub(indent + 1)
    end
    j = j + 1
  end
  p.i = j
  return lines
end

-- the block scalar's body with its final line breaks as mode ("-", "+" or
-- "") says; `breaks` counts them (the last line of a file may have none)
local function chomp(body, has_content, breaks, mode)
  if mode == "-" or not has_content and mode ~= "+" then
    return body
  elseif mode == "+" then
    return body .. ("\n"):rep(breaks)
  end
  return body .. ("\n"):rep(math.min(breaks, 1))
end

-- a "|" or ">" scalar whose header is on line i
local function parse_block_scalar(p, i, parent, header)
  local style, flags, tail = header:match("^([|>])([%-+0-9]*)(.*)$")
  local digit, mode = flags:match("[1-9]") or "", flags:match("[%-+]") or ""
  if #flags ~= #digit + #mode or not (tail:find("^[ \t]*$") or tail:find("^[ \t]+#")) then
    fail(i, "invalid block scalar header '" .. header .. "'")
  end
  local indent = digit ~= "" and math.max(parent, 0) + tonumber(digit) or nil
  local lines = block_lines(p, i, parent, indent)
  local last = #lines
  while last > 0 and lines[last] == "" do
    last = last - 1
  end
  local body = style == "|" and table.concat(lines, "\n", 1, last) or fold_lines(lines, last)
  local breaks = #lines - last + (last > 0 and 1 or 0)
  if p.i > p.n and not p.final_break then
    breaks = breaks - 1
  end
  return chomp(body, last > 0, breaks, mode)
end

local parse_flow

-- a one-line flow collection starting with s on line i
local function parse_flow_line(p, i, s, depth)
  local f = { s = s, pos = 1, line = i, depth = depth }
  local value = parse_flow(f)
  if not is_blank(s:sub(f.pos)) then
    fail(i, "unexpected text after flow collection: '" .. s:sub(f.pos) .. "'")
  end
  p.i = i + 1
  return value
end

-- a value that starts on line i (after "key:" or "- ", or alone on its line)
local function parse_inline(p, i, parent, s, depth)
  local c = s:sub(1, 1)
  if c == "|" or c == ">" then
    return parse_block_scalar(p, i, parent, s)
  elseif c == "[" or c == "{" then
    return parse_flow_line(p, i, s, depth)
  elseif c == '"' or c == "'" then
    local value, after, last = scan_quoted(p, i, s)
    if not is_blank(after) then
      fail(last, "unexpected text after quoted scalar: '" .. after .. "'")
    end
    p.i = last + 1
    return value
  elseif is_seq_item(s) then
    fail(i, "a sequence item cannot start here (put it on its own line)")
  end
  check_start(s, i)
  return parse_plain(p, i, parent, s)
end

local parse_block

-- a block sequence whose "- " markers are in column indent
local function parse_seq(p, indent, depth)
  local list, n = new_sequence(), 0
  while true do
    local i, ind, text = peek(p)
    if not i or ind < indent or not is_seq_item(text) then
      return list
    end
    if ind > indent then
      fail(i, "bad indentation of a sequence item (expected " .. indent .. " spaces)")
    end
    local rest = text:gsub("^%-[ \t]*", "")
    if is_blank(rest) then
      p.i = i + 1
    else
      p.virt[i] = { indent = indent + #text - #rest, text = rest }
    end
    n = n + 1
    list[n] = parse_block(p, indent, depth + 1)
  end
end

-- the value of "key:" on line i of a mapping in column indent
local function parse_map_value(p, i, indent, rest, depth)
  if not is_blank(rest) then
    return parse_inline(p, i, indent, rest, depth + 1)
  end
  p.i = i + 1
  local j, ind, text = peek(p)
  if j and ind == indent and is_seq_item(text) then
    return parse_seq(p, indent, depth + 1)
  end
  return parse_block(p, indent, depth + 1)
end

-- a block mapping whose keys are in column indent
local function parse_map(p, indent, depth)
  local map, seen = {}, {}
  while true do
    local i, ind, text = peek(p)
    if not i or ind < indent then
      return map
    end
    if ind > indent then
      fail(i, "bad indentation (expected " .. indent .. " spaces, found " .. ind .. ")")
    end
    local key, rest = mapping_key(text, i)
    if not key then
      fail(i, "expected 'key: value' at this indentation")
    end
    if seen[key] then
      fail(i, string.format('duplicate key "%s" (first at line %d)', key, seen[key]))
    end
    seen[key] = i
    map[key] = parse_map_value(p, i, indent, rest, depth)
  end
end

-- the node whose lines are indented more than parent (nil when there is none)
parse_block = function(p, parent, depth)
  local i, indent, text = peek(p)
  if not i or indent <= parent then
    return nil
  end
  if depth > MAX_DEPTH then
    fail(i, "nesting too deep")
  end
  if is_seq_item(text) then
    return parse_seq(p, indent, depth)
  elseif mapping_key(text, i) then
    return parse_map(p, indent, depth)
  end
  return parse_inline(p, i, parent, text, depth)
end

-- flow collections: f = { s = line text, pos = position, line = n, depth = d }

-- skips blanks; returns the character at the new position ("" at the end)
local function skip_ws(f)
  f.pos = f.s:find("[^ \t]", f.pos) or #f.s + 1
  return f.s:sub(f.pos, f.pos)
end

-- a plain scalar inside a flow collection; nil when there is none
local function flow_plain(f)
  local s, pos = f.s, f.pos
  local stop = math.min(s:find("[,%[%]{}]", pos) or #s + 1, s:find(":[ \t,%[%]{}]", pos) or #s + 1,
    s:find(":$", pos) or #s + 1, s:find("[ \t]#", pos) or #s + 1)
  local text = s:sub(pos, stop - 1):gsub("[ \t]+$", "")
  f.pos = stop
  return text
end

-- a scalar inside a flow collection: its value and whether it was written at all
local function flow_scalar(f)
  local c = f.s:sub(f.pos, f.pos)
  if c == '"' or c == "'" then
    local value, close = quoted_on_line(f.s, f.pos, f.line)
    if not close then
      fail(f.line, "unterminated quoted scalar (flow collections must fit on one line)")
    end
    f.pos = close
    return value, true
  end
  if c == "|" or c == ">" then
    fail(f.line, "block scalars are not allowed inside flow collections")
  end
  check_start(f.s:sub(f.pos), f.line)
  if is_seq_item(f.s:sub(f.pos)) then
    fail(f.line, "block sequence items are not allowed inside flow collections")
  end
  local text = flow_plain(f)
  if NULLS[text] then
    return nil, text ~= ""
  end
  return text, true
end

local function flow_value(f)
  local c = skip_ws(f)
  if c == "" then
    fail(f.line, "flow collection not closed on this line (multi-line flow collections are not supported)")
  end
  if c == "[" or c == "{" then
    return parse_flow(f)
  end
  local value, present = flow_scalar(f)
  if not present then
    fail(f.line, "expected a value in flow collection")
  end
  return value
end

-- the value after "key:" in a flow mapping (nil when left empty)
local function flow_map_value(f)
  local c = skip_ws(f)
  if c == "," or c == "}" or c == "]" then
    return nil
  end
  return flow_value(f)
end

local function flow_key(f)
  local c = skip_ws(f)
  if c == "[" or c == "{" then
    fail(f.line, "flow collections as mapping keys are not supported")
  end
  local start = f.pos
  local value, present = flow_scalar(f)
  if not present then
    fail(f.line, "expected a key in flow mapping")
  end
  return value or f.s:sub(start, f.pos - 1)
end

-- after an entry: "," or the closing bracket; returns true when closed
local function flow_next(f, close, what)
  local c = skip_ws(f)
  f.pos = f.pos + 1
  if c == close then
    return true
  elseif c == "" then
    fail(f.line, what .. " not closed on this line (multi-line flow collections are not supported)")
  elseif c ~= "," then
    fail(f.line, "expected ',' or '" .. close .. "' in " .. what .. ", found '" .. c .. "'")
  end
  if skip_ws(f) == close then
    f.pos = f.pos + 1
    return true
  end
  return false
end

-- an entry of a flow sequence: a value, or a single "key: value" pair
local function flow_seq_entry(f)
  local value = flow_value(f)
  if skip_ws(f) ~= ":" then
    return value
  end
  if type(value) ~= "string" then
    fail(f.line, "unsupported key in flow sequence pair")
  end
  f.pos = f.pos + 1
  return { [value] = flow_map_value(f) }
end

local function flow_seq(f)
  local list, n = new_sequence(), 0
  f.pos = f.pos + 1
  if skip_ws(f) == "]" then
    f.pos = f.pos + 1
    return list
  end
  repeat
    n = n + 1
    list[n] = flow_seq_entry(f)
  until flow_next(f, "]", "flow sequence")
  return list
end

local function flow_map(f)
  local map, seen = {}, {}
  f.pos = f.pos + 1
  if skip_ws(f) == "}" then
    f.pos = f.pos + 1
    return map
  end
  repeat
    local key = flow_key(f)
    if seen[key] then
      fail(f.line, string.format('duplicate key "%s" in flow mapping', key))
    end
    seen[key] = true
    if skip_ws(f) == ":" then
      f.pos = f.pos + 1
      map[key] = flow_map_value(f)
    end
  until flow_next(f, "}", "flow mapping")
  return map
end

parse_flow = function(f)
  f.depth = f.depth + 1
  if f.depth > MAX_DEPTH then
    fail(f.line, "nesting too deep")
  end
  local value
  if f.s:sub(f.pos, f.pos) == "[" then
    value = flow_seq(f)
  else
    value = flow_map(f)
  end
  f.depth = f.depth - 1
  return value
end

-- document level

local function split_lines(text)
  if text:sub(1, 3) == "\239\187\191" then
    text = text:sub(4)
  end
  text = text:gsub("\r\n", "\n"):gsub("\r", "\n")
  local final_break = text:sub(-1) == "\n"
  if not final_break then
    text = text .. "\n"
  end
  local lines = {}
  for raw in text:gmatch("([^\n]*)\n") do
    lines[#lines + 1] = raw
  end
  return lines, text, final_break
end

local function check_controls(text)
  local at = text:find("[%z\1-\8\11\12\14-\31\127]")
  if at then
    local _, breaks = text:sub(1, at):gsub("\n", "")
    fail(breaks + 1, string.format("control character 0x%02X is not allowed", text:byte(at)))
  end
end

local function is_marker(raw, marker)
  return raw:sub(1, 3) == marker and (#raw == 3 or raw:find("^[ \t]", 4) ~= nil)
end

-- blanks out "---", "..." and leading directives; rejects a second document
local function strip_markers(p)
  local started, ended = false, false
  for i = 1, p.n do
    local raw = p.raw[i]
    if ended and not is_blank(raw) then
      fail(i, "only one YAML document is supported")
    elseif is_marker(raw, "---") then
      if started then
        fail(i, "only one YAML document is supported")
      elseif not is_blank(raw:sub(4)) then
        fail(i, "content on the '---' line is not supported")
      end
      p.raw[i], started = "", true
    elseif is_marker(raw, "...") then
      p.raw[i], ended = "", true
    elseif not started and raw:find("^%%") then
      p.raw[i] = ""
    elseif not is_blank(raw) then
      started = true
    end
  end
end

local function parse_document(p, text)
  local lines, normalized, final_break = split_lines(text)
  check_controls(normalized)
  p.raw, p.n, p.final_break = lines, #lines, final_break
  strip_markers(p)
  local value = parse_block(p, -1, 0)
  local i = peek(p)
  if i then
    fail(i, "unexpected content (bad indentation?)")
  end
  return value
end

-- text: the YAML; source_name: what error messages call it (a file name)
function _M.parse(text, source_name)
  source_name = source_name or "<yaml>"
  if type(text) ~= "string" then
    return nil, source_name .. ":1: expected YAML text, got " .. type(text)
  end
  local p = { i = 1, n = 0, virt = {} }
  local ok, result = pcall(parse_document, p, text)
  if ok then
    return result
  elseif type(result) == "table" then
    return nil, string.format("%s:%d: %s", source_name, result.line, result.msg)
  end
  return nil, string.format("%s:%d: internal parser error: %s", source_name, p.i, tostring(result))
end

return _M
