-- go_template_parse.lua - parses the subset of Go's text/template that
-- SkyWalking Rover's configuration files use into a tree that
-- go_template.lua checks and runs. Whatever else Go accepts (variables,
-- range, with, define, comments, ...) is an error naming it and its place.
--
-- The tree: a list of nodes, each
--   { kind = "text", text = "..." }
--   { kind = "action", pipe = pipe, at = "1:7" }
--   { kind = "if", pipe = pipe, yes = list, no = list or nil, at = ... }
-- A pipe is a list of commands (each one's value is the last argument of the
-- next); a command a list of operands, each
--   { kind = "string" | "number" | "bool", value = v }
--   { kind = "dot" }                       .
--   { kind = "field", names = { "Pod", "Name" }, base = nil | operand }
--                                          .Pod.Name, or (pipe).Name with base
--   { kind = "ident", name = "eq" }        a function
--   { kind = "pipe", pipe = pipe }         ( pipe )
-- and every node and operand has at = "line:column" of where it starts.
local _M = {}

local SPACE = "[ \t\r\n]"

local KEYWORDS = { ["if"] = true, ["else"] = true, ["end"] = true }

local UNSUPPORTED_WORDS = {
  range = true, with = true, define = true, template = true, block = true, ["break"] = true,
  continue = true, ["nil"] = true,
}

local ESCAPES = { a = "\a", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", v = "\v", ["\\"] = "\\",
  ['"'] = '"' }

-- "line:column" of byte pos of text.
local function where(text, pos)
  local line, col = 1, 1
  for i = 1, pos - 1 do
    if text:byte(i) == 10 then
      line, col = line + 1, 1
    else
      col = col + 1
    end
  end
  return string.format("%d:%d", line, col)
end

-- Raises a parse error; parse() turns it into nil, message.
local function fail(p, pos, fmt, ...)
  error({ message = string.format("%s%s: " .. fmt, p.prefix, where(p.text, pos), ...) }, 0)
end

-- A code point as UTF-8.
local function utf8_char(cp)
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

-- An interpreted string literal starting at pos (its opening quote): value, next position.
local function quoted(p, pos)
  local text, out, i = p.text, {}, pos + 1
  while true do
    local c = text:sub(i, i)
    if c == "" or c == "\n" then
      fail(p, pos, "unterminated quoted string")
    elseif c == '"' then
      return table.concat(out), i + 1
    elseif c == "\\" then
      local e = text:sub(i + 1, i + 1)
      local hex = (e == "x" and 2) or (e == "u" and 4) or (e == "U" and 8)
      if ESCAPES[e] then
        out[#out + 1], i = ESCAPES[e], i + 2
      elseif hex and text:sub(i + 2, i + 1 + hex):match("^" .. string.rep("%x", hex) .. "$") then
        local n = tonumber(text:sub(i + 2, i + 1 + hex), 16)
        out[#out + 1], i = e == "x" and string.char(n) or utf8_char(n), i + 2 + hex
      else
        fail(p, i, "unknown escape sequence in string")
      end
    else
      out[#out + 1], i = c, i + 1
    end
  end
end

-- The next token of an action from pos: { kind, value, pos, stop } or nil at
-- the end of the action (then the position after it and whether it trims).
local function token(p, pos)
  local text = p.text
  local s = text:find("[^ \t\r\n]", pos) or #text + 1
  if text:sub(s, s + 1) == "}}" then
    return nil, s + 2, false
  end
  if text:sub(s, s + 2) == "-}}" and s > pos then
    return nil, s + 3, true
  end
  local c = text:sub(s, s)
  local function tok(kind, value, stop)
    return { kind = kind, value = value, pos = s, stop = stop, spaced = s > pos }
  end
  if c == "" then
    fail(p, p.open, "unclosed action")
  elseif c == "|" or c == "(" or c == ")" then
    return tok(c, nil, s + 1)
  elseif c == '"' then
    local v, stop = quoted(p, s)
    return tok("string", v, stop)
  elseif c == "`" then
    local close = text:find("`", s + 1, true)
    if not close then
      fail(p, s, "unterminated raw quoted string")
    end
    return tok("string", text:sub(s + 1, close - 1), close + 1)
  elseif c == "." and not text:sub(s + 1, s + 1):match("[%w_]") then
    return tok("dot", nil, s + 1)
  elseif c == "." then
    local names, i = {}, s
    while text:sub(i, i) == "." and text:sub(i + 1, i + 1):match("[%a_]") do
      local name = text:match("^[%w_]+", i + 1)
      names[#names + 1], i = name, i + 1 + #name
    end
    if text:sub(i, i):match("[%w_.]") then
      fail(p, s, "bad field name %q", text:match("^[%w_.]+", s))
    end
    return tok("field", names, i)
  elseif c:match("[%d+-]") then
    local word = text:match("^[+-]?[%w._]+", s)
    local n = word and tonumber((word:gsub("_", "")))
    if not n then
      fail(p, s, "bad number syntax: %q", word or c)
    end
    return tok("number", n, s + #word)
  elseif c:match("[%a_]") then
    local word = text:match("^[%w_]+", s)
    if word == "true" or word == "false" then
      return tok("bool", word == "true", s + #word)
    end
    if UNSUPPORTED_WORDS[word] then
      fail(p, s, "%q is not supported", word)
    end
    return tok(KEYWORDS[word] and "keyword" or "ident", word, s + #word)
  elseif c == "$" then
    fail(p, s, "variables (%s) are not supported", text:match("^%$[%w_]*", s))
  elseif c == "'" then
    fail(p, s, "character constants are not supported")
  elseif text:sub(s, s + 1) == "/*" then
    fail(p, s, "comments are not supported")
  end
  fail(p, s, "unexpected %q in action", c)
end

-- The tokens of the action opened at p.open, the position after it and
-- whether it ends with a trim marker.
local function action_tokens(p, pos)
  local list = {}
  while true do
    local t, after, trim = token(p, pos)
    if not t then
      return list, after, trim
    end
    list[#list + 1] = t
    pos = t.stop
  end
end

local parse_pipe

local function operand(p, toks, i)
  local t = toks[i]
  local at = where(p.text, t.pos)
  local node
  if t.kind == "string" or t.kind == "number" or t.kind == "bool" then
    node = { kind = t.kind, value = t.value, at = at }
  elseif t.kind == "dot" then
    node = { kind = "dot", at = at }
  elseif t.kind == "field" then
    node = { kind = "field", names = t.value, at = at }
  elseif t.kind == "ident" then
    node = { kind = "ident", name = t.value, at = at }
  elseif t.kind == "(" then
    local pipe, j = parse_pipe(p, toks, i + 1, t.pos)
    if not toks[j] or toks[j].kind ~= ")" then
      fail(p, t.pos, "unclosed left paren")
    end
    node, i = { kind = "pipe", pipe = pipe, at = at }, j
  elseif t.kind == "keyword" then
    fail(p, t.pos, "unexpected %q in command", t.value)
  else
    fail(p, t.pos, "unexpected %q in command", t.kind)
  end
  local nxt = toks[i + 1]
  if nxt and nxt.kind == "field" and not nxt.spaced then
    if node.kind ~= "pipe" then
      fail(p, nxt.pos, "unexpected field %s after %s", "." .. table.concat(nxt.value, "."), node.kind)
    end
    node, i = { kind = "field", names = nxt.value, base = node, at = at }, i + 1
  end
  return node, i + 1
end

-- A pipe from toks[i]: the pipe and the index after it (a ")" or the end).
function parse_pipe(p, toks, i, pos)
  local pipe, cmd, bar = {}, {}, nil
  while true do
    local t = toks[i]
    if not t or t.kind == ")" or t.kind == "|" then
      if #cmd == 0 then
        fail(p, bar or (t and t.pos) or pos, "missing value for command")
      end
      pipe[#pipe + 1], cmd = cmd, {}
      if not t or t.kind == ")" then
        return pipe, i
      end
      bar, i = t.pos, i + 1
    else
      cmd[#cmd + 1], i = operand(p, toks, i)
    end
  end
end

-- The whole of toks as one pipe.
local function whole_pipe(p, toks, i, pos)
  local pipe, j = parse_pipe(p, toks, i, pos)
  if toks[j] then
    fail(p, toks[j].pos, "unexpected %q in action", toks[j].kind)
  end
  return pipe
end

-- Applies one action's tokens to the tree being built (p.stack: the open
-- ifs, innermost last, each { node, list }).
local function apply(p, toks, open)
  local first, top = toks[1], p.stack[#p.stack]
  local at = where(p.text, open)
  if not first then
    fail(p, open, "missing value for command")
  end
  if first.kind ~= "keyword" then
    top.list[#top.list + 1] = { kind = "action", pipe = whole_pipe(p, toks, 1, open), at = at }
    return
  end
  local word = first.value
  if word == "if" then
    local node = { kind = "if", pipe = whole_pipe(p, toks, 2, first.stop), yes = {}, at = at }
    top.list[#top.list + 1] = node
    p.stack[#p.stack + 1] = { node = node, list = node.yes }
  elseif #p.stack == 1 then
    fail(p, open, "unexpected {{%s}}", word)
  elseif word == "end" then
    if toks[2] then
      fail(p, toks[2].pos, "unexpected %q in end", toks[2].kind)
    end
    p.stack[#p.stack] = nil
  elseif top.node.no then
    fail(p, open, "unexpected {{else}} after {{else}}")
  elseif toks[2] and toks[2].kind == "keyword" and toks[2].value == "if" then
    -- {{else if x}} opens an if inside the else that the same {{end}} closes.
    local inner = { kind = "if", pipe = whole_pipe(p, toks, 3, toks[2].stop), yes = {}, at = at }
    top.node.no = { inner }
    p.stack[#p.stack] = { node = inner, list = inner.yes }
  elseif toks[2] then
    fail(p, toks[2].pos, "unexpected %q in else", toks[2].kind)
  else
    top.node.no = {}
    top.list = top.node.no
  end
end

-- The tree of text, or nil and an error "NAME:line:col: what" (name is
-- opts.name; the error has no name prefix without one).
function _M.parse(text, name)
  local root = {}
  local p = { text = text, stack = { { list = root } }, prefix = name and (name .. ":") or "" }
  local ok, err = pcall(function()
    local pos, trim_next = 1, false
    while true do
      local open = text:find("{{", pos, true)
      local literal = text:sub(pos, open and open - 1 or -1)
      if trim_next then
        literal = literal:gsub("^" .. SPACE .. "+", "")
      end
      local start = open and open + 2
      if open and text:sub(start, start) == "-" and text:sub(start + 1, start + 1):match(SPACE) then
        literal, start = literal:gsub(SPACE .. "+$", ""), start + 1
      end
      local top = p.stack[#p.stack]
      if literal ~= "" then
        top.list[#top.list + 1] = { kind = "text", text = literal }
      end
      if not open then
        break
      end
      p.open = open
      local toks, after, trim = action_tokens(p, start)
      apply(p, toks, open)
      pos, trim_next = after, trim
    end
    if #p.stack > 1 then
      fail(p, #text + 1, "unexpected end of template: {{if}} at %s has no {{end}}", p.stack[#p.stack].node.at)
    end
  end)
  if not ok then
    if type(err) == "table" then
      return nil, err.message
    end
    error(err, 0)
  end
  return root
end

return _M
