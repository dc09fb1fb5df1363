-- folded.lua - folded-stack output ("comm;root;...;leaf VALUE" per line), the
-- text format flamegraph.pl, inferno and speedscope read, and its parser.
-- Per-thread stacks have the thread's frame ("tid-1234 (worker)") between
-- the process and the root.
-- Kernel frames carry the "_[k]" suffix and JIT frames "_[j]", the
-- convention those tools use to colour them; parse() turns them back into kinds.
local _M = {}

local SUFFIX = { kernel = "_[k]", jit = "_[j]" }
local KIND_OF_SUFFIX = { k = "kernel", j = "jit" }

-- Whether stack values are nanoseconds (off-CPU) rather than sample counts.
function _M.uses_nanos(meta)
  return meta ~= nil and (meta.off_cpu == true or meta.unit == "nanoseconds")
end

-- The value of one stack under meta: nanos for off-CPU, count otherwise.
function _M.value_of(stack, meta)
  local v
  if _M.uses_nanos(meta) then v = stack.nanos else v = stack.count end
  return tonumber(v) or 0
end

-- Makes a frame or comm safe for a folded line: no ';', no control
-- characters, no surrounding blanks, and no trailing " NUMBER" that a reader
-- could take for the line's value.
function _M.clean(name)
  name = tostring(name or "")
  name = name:gsub(";", ":"):gsub("%c", " ")
  name = name:match("^%s*(.-)%s*$")
  name = name:gsub("%s+(%d[%d.]*)$", "_%1")
  if name == "" then return "[unknown]" end
  return name
end

-- The frame that stands for a stack's thread in a per-thread profile
-- ("tid-1234 (worker)", "tid-1234" when its name is unknown), or nil.
function _M.thread_frame(stack)
  if not stack.tid then return nil end
  if (stack.thread or "") == "" then return "tid-" .. stack.tid end
  return "tid-" .. stack.tid .. " (" .. stack.thread .. ")"
end

-- A memo of folded frame names per kind, for one render.
local function frame_cache()
  return setmetatable({}, { __index = function(cache, kind)
    local names = setmetatable({}, { __index = function(names, name)
      local text = _M.clean(name) .. (SUFFIX[kind] or "")
      names[name] = text
      return text
    end })
    cache[kind] = names
    return names
  end })
end

local function stack_key(stack, cache)
  local parts = { cache.process[stack.comm or ""] }
  local thread = _M.thread_frame(stack)
  if thread then parts[2] = cache.process[thread] end
  local kinds, base = stack.kinds or {}, #parts
  for i, name in ipairs(stack.frames or {}) do
    parts[base + i] = cache[kinds[i] or "user"][name]
  end
  return table.concat(parts, ";")
end

-- Sums values per folded stack; returns the sorted keys and the sums.
local function merge(stacks, meta)
  local sums, keys, cache = {}, {}, frame_cache()
  for _, stack in ipairs(stacks) do
    local v = _M.value_of(stack, meta)
    if v > 0 then
      local key = stack_key(stack, cache)
      if not sums[key] then keys[#keys + 1] = key end
      sums[key] = (sums[key] or 0) + v
    end
  end
  table.sort(keys)
  return keys, sums
end

local function format_value(v)
  return string.format("%.0f", v)
end

-- The folded text of a profile: one sorted line per distinct stack.
function _M.render(stacks, meta)
  local keys, sums = merge(stacks, meta or {})
  local lines = {}
  for i, key in ipairs(keys) do
    lines[i] = key .. " " .. format_value(sums[key]) .. "\n"
  end
  return table.concat(lines)
end

function _M.write(stacks, meta, fh)
  fh:write(_M.render(stacks, meta))
end

local function parse_frame(text)
  if text:byte(-1) ~= 93 then return text, "user" end  -- no closing ']'
  local name, tag = text:match("^(.*)_%[(%a)%]$")
  local kind = tag and KIND_OF_SUFFIX[tag]
  if kind then return name, kind end
  return text, "user"
end

local function split(text)
  local parts = {}
  for part in (text .. ";"):gmatch("([^;]*);") do
    parts[#parts + 1] = part
  end
  return parts
end

local function parse_line(line, field)
  local path, value = line:match("^(.*%S)%s+(%d+%.?%d*)%s*$")
  if not path then return nil end
  local parts = split(path)
  local stack = { comm = parts[1], frames = {}, kinds = {} }
  for i = 2, #parts do
    stack.frames[i - 1], stack.kinds[i - 1] = parse_frame(parts[i])
  end
  stack[field] = tonumber(value)
  return stack
end

-- Reads folded text back into stacks (no pids: the format has none). Values
-- go to nanos when meta says off-CPU, to count otherwise; lines that are not
-- folded stacks are skipped.
function _M.parse(text, meta)
  local field = _M.uses_nanos(meta) and "nanos" or "count"
  local stacks = {}
  for line in text:gmatch("[^\r\n]+") do
    stacks[#stacks + 1] = parse_line(line, field)
  end
  return stacks
end

return _M
