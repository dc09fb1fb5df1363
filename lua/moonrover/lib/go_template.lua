-- go_template.lua - compiles and runs the subset of Go's text/template that
-- SkyWalking Rover's process naming uses: text and {{actions}} (with the
-- "{{- " and " -}}" trim markers), pipelines, field chains and method calls
-- with arguments (.Pod.LabelValue "a,b" ""), parenthesised pipes with fields
-- ((.Pod.FindContainer "x").Name), string, number and bool literals,
-- {{if}}/{{else}}/{{else if}}/{{end}}, and the functions eq, ne, and, or,
-- not and Rover's equalsOrDefault. go_template_parse.lua names what else is
-- refused.
--
--   local tpl, err = go_template.compile(text, { name = "service_name", fields = SCHEMA })
--   local s, err = tpl:render(data)
--   local f, err = go_template.filter('eq .Container.Name "x"', opts)  -- as Rover, {{...}}
--   local yes, err = f:test(data)       -- what it renders read as Go's ParseBool
--
-- Data: a table per Go value; a field is a key; a method is a function
-- m(self, args...) returning its value, or nil and an error (which stops
-- the rendering, as a Go method's error does).
-- Fields (optional) describe the data so that a misspelt field or a wrong
-- number of arguments is a compile error: a table of member name -> spec,
-- spec = number of arguments (the value is a string, number or bool) or
-- { args = n, fields = table } (the value is an object with those members)
-- or { args = { fewest, most } } (a method taking either).
local parse = require("moonrover.lib.go_template_parse")

local _M = {}
local Template = {}
Template.__index = Template

-- Functions: fewest and most arguments.
local FUNCTIONS = {
  eq = { 2, math.huge }, ne = { 2, 2 }, ["and"] = { 1, math.huge }, ["or"] = { 1, math.huge },
  ["not"] = { 1, 1 }, equalsOrDefault = { 3, 3 },
}

local function fail(at, fmt, ...)
  error({ message = string.format(at .. ": " .. fmt, ...) }, 0)
end

local function plural(n)
  return n == 1 and "1 argument" or string.format("%d arguments", n)
end

-- ------------------------------------------------------------ checks

local check_pipe

-- What an operand gives when static: a fields table, "value", or nil (unknown).
local function check_operand(c, op, nargs)
  local kind = op.kind
  if kind == "ident" then
    local limits = FUNCTIONS[op.name]
    if not limits then
      fail(op.at, "function %q not defined", op.name)
    end
    if nargs < limits[1] or nargs > limits[2] then
      fail(op.at, "%s takes %s%s, not %d", op.name, limits[1] == limits[2] and "" or "at least ", plural(limits[1]),
        nargs)
    end
    return "value"
  end
  if kind ~= "field" then
    if nargs > 0 then
      fail(op.at, "%s is not a function and takes no arguments", kind == "pipe" and "a parenthesised pipe" or kind)
    end
    if kind == "pipe" then
      return check_pipe(c, op.pipe)
    end
    return kind == "dot" and c.fields or "value"
  end
  local t = c.fields
  if op.base then
    t = check_pipe(c, op.base.pipe)
  end
  for i, name in ipairs(op.names) do
    if t == nil then
      return nil
    end
    local path = (op.base and "(...)." or ".") .. table.concat(op.names, ".", 1, i)
    if t == "value" then
      local owner = i == 1 and "the value" or path:sub(1, -#name - 2)
      fail(op.at, "%s: %s has no fields", path, owner)
    end
    local spec = t[name]
    if spec == nil then
      fail(op.at, "unknown field %s", path)
    end
    local want = type(spec) == "number" and spec or spec.args
    local fewest, most = want, want
    if type(want) == "table" then
      fewest, most = want[1], want[2]
    end
    local given = i == #op.names and nargs or 0
    if given < fewest or given > most then
      local range = fewest == most and plural(fewest) or string.format("%d to %d arguments", fewest, most)
      fail(op.at, "%s takes %s, not %d", path, range, given)
    end
    t = type(spec) == "table" and spec.fields or "value"
  end
  return t
end

function check_pipe(c, pipe)
  local t
  for i, cmd in ipairs(pipe) do
    local piped = i > 1 and 1 or 0
    t = check_operand(c, cmd[1], #cmd - 1 + piped)
    for j = 2, #cmd do
      check_operand(c, cmd[j], 0)
    end
  end
  return t
end

local function check_list(c, list)
  for _, node in ipairs(list) do
    if node.kind == "action" then
      check_pipe(c, node.pipe)
    elseif node.kind == "if" then
      check_pipe(c, node.pipe)
      check_list(c, node.yes)
      check_list(c, node.no or {})
    end
  end
end

-- ------------------------------------------------------------ running

-- Go's truth: false, 0, nil and "" are false.
local function truth(v)
  return not (v == nil or v == false or v == 0 or v == "")
end

local COMPARABLE = { string = true, number = true, boolean = true }

local function equal(at, a, b)
  if not COMPARABLE[type(a)] or not COMPARABLE[type(b)] then
    fail(at, "invalid type for comparison")
  end
  if type(a) ~= type(b) then
    fail(at, "incompatible types for comparison")
  end
  return a == b
end

local eval_pipe, eval_operand

local function member(at, v, name, args, path)
  if v == nil then
    fail(at, "nil pointer evaluating %s", path)
  end
  if type(v) ~= "table" then
    fail(at, "can't evaluate field %s in type %s", name, type(v))
  end
  local m = v[name]
  if type(m) == "function" then
    local r, err = m(v, unpack(args))
    if err ~= nil then
      fail(at, "error calling %s: %s", name, tostring(err))
    end
    return r
  end
  if m == nil then
    fail(at, "can't evaluate field %s", name)
  end
  if #args > 0 then
    fail(at, "%s has arguments but is not a method", path)
  end
  return m
end

local function eval_field(op, data, args)
  local v = data
  if op.base then
    v = eval_pipe(op.base.pipe, data)
  end
  for i, name in ipairs(op.names) do
    local path = (op.base and "(...)." or ".") .. table.concat(op.names, ".", 1, i)
    v = member(op.at, v, name, i == #op.names and args or {}, path)
  end
  return v
end

local function call(op, n, arg)
  local name = op.name
  if name == "and" or name == "or" then
    local v
    for i = 1, n do
      v = arg(i)
      if truth(v) == (name == "or") then
        return v
      end
    end
    return v
  elseif name == "not" then
    return not truth(arg(1))
  elseif name == "ne" then
    return not equal(op.at, arg(1), arg(2))
  elseif name == "eq" then
    local a = arg(1)
    for i = 2, n do
      if equal(op.at, a, arg(i)) then
        return true
      end
    end
    return false
  end
  -- equalsOrDefault eq ifSame value: ifSame when value is eq, else value.
  local eq, same, value = arg(1), arg(2), arg(3)
  for _, v in ipairs({ eq, same, value }) do
    if type(v) ~= "string" then
      fail(op.at, "equalsOrDefault takes strings, not a %s", type(v))
    end
  end
  return value == eq and same or value
end

-- A command's value; piped is the previous command's (has_piped: whether
-- there is one). Arguments are evaluated when used, so that and/or stop early.
local function eval_command(cmd, data, piped, has_piped)
  local first = cmd[1]
  local n = #cmd - 1 + (has_piped and 1 or 0)
  if first.kind == "ident" then
    return call(first, n, function(i)
      if i < #cmd then
        return eval_operand(cmd[i + 1], data)
      end
      return piped
    end)
  end
  if first.kind == "field" then
    local args = {}
    for i = 2, #cmd do
      args[i - 1] = eval_operand(cmd[i], data)
    end
    if has_piped then
      args[#args + 1] = piped
    end
    return eval_field(first, data, args)
  end
  return eval_operand(first, data)
end

function eval_operand(op, data)
  local kind = op.kind
  if kind == "string" or kind == "number" or kind == "bool" then
    return op.value
  elseif kind == "dot" then
    return data
  elseif kind == "pipe" then
    return eval_pipe(op.pipe, data)
  elseif kind == "field" then
    return eval_field(op, data, {})
  end
  return call(op, 0, function() return nil end)
end

function eval_pipe(pipe, data)
  local v
  for i, cmd in ipairs(pipe) do
    v = eval_command(cmd, data, v, i > 1)
  end
  return v
end

local function text_of(at, v)
  local t = type(v)
  if t == "string" then
    return v
  elseif t == "boolean" then
    return tostring(v)
  elseif t == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
      return string.format("%d", v)
    end
    return string.format("%.14g", v)
  elseif v == nil then
    return "<no value>"
  end
  fail(at, "cannot print an object")
end

local function run_list(list, data, out)
  for _, node in ipairs(list) do
    if node.kind == "text" then
      out[#out + 1] = node.text
    elseif node.kind == "action" then
      out[#out + 1] = text_of(node.at, eval_pipe(node.pipe, data))
    elseif truth(eval_pipe(node.pipe, data)) then
      run_list(node.yes, data, out)
    elseif node.no then
      run_list(node.no, data, out)
    end
  end
end

-- Runs fn, turning a raised failure into nil, "NAME:line:col: what".
local function guarded(prefix, fn, ...)
  local ok, r = pcall(fn, ...)
  if ok then
    return r
  end
  if type(r) == "table" and r.message then
    return nil, prefix .. r.message
  end
  error(r, 0)
end

-- ------------------------------------------------------------ API

-- The template of text, or nil and an error naming what and where.
function _M.compile(text, opts)
  opts = opts or {}
  if type(text) ~= "string" then
    return nil, (opts.name and opts.name .. ": " or "") .. "not a string"
  end
  local tree, err = parse.parse(text, opts.name)
  if not tree then
    return nil, err
  end
  local prefix = opts.name and (opts.name .. ":") or ""
  local ok
  ok, err = guarded(prefix, function()
    check_list({ fields = opts.fields }, tree)
    return true
  end)
  if not ok then
    return nil, err
  end
  return setmetatable({ tree = tree, text = text, prefix = prefix }, Template)
end

-- What the template writes for data, or nil and an error naming the
-- template, the place and what failed.
function Template:render(data)
  return guarded(self.prefix, function()
    local out = {}
    run_list(self.tree, data, out)
    return table.concat(out)
  end)
end

-- Go's strconv.ParseBool, which reads what Rover's filters render.
local BOOLS = { ["1"] = true, t = true, T = true, TRUE = true, ["true"] = true, True = true,
  ["0"] = false, f = false, F = false, FALSE = false, ["false"] = false, False = false }

-- Whether data passes the filter, or nil and an error.
function Template:test(data)
  local s, err = self:render(data)
  if not s then
    return nil, err
  end
  local yes = BOOLS[s]
  if yes == nil then
    return nil, string.format("%s%q is not a boolean", self.prefix ~= "" and self.prefix .. " " or "", s)
  end
  return yes
end

-- A filter: Rover's expression without braces, run as "{{<expr>}}".
function _M.filter(expr, opts)
  if type(expr) ~= "string" then
    return _M.compile(expr, opts)
  end
  return _M.compile("{{" .. expr .. "}}", opts)
end

return _M
