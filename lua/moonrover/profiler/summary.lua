-- summary.lua - the end-of-run summary of a profile: compute() finds the
-- hottest functions by self and by total value; format() renders them with
-- the run's statistics as one screen of text (<= 80 columns, <= 30 lines).
--
-- stats (every field optional): duration (seconds), samples (number taken),
-- lost ({ {reason=, n=}, ... }), truncated (user stacks cut at a frame that
-- is not code), gone_after (seconds into the profile when every profiled
-- process had exited), unwind (see unwind_line), output (path written). meta: scope ("all processes",
-- "pid 7"), off_cpu.
--
-- An address no symbol covers is a frame "module+0xoffset" (the drain names
-- it so), marked unresolved in the stack's `resolved` list (profile_view.lua);
-- the symbolizer knows no bounds of a function it has no symbol for, so the
-- summary cannot tell which such addresses share a function and counts them
-- by module instead, as "[module]" (perf's way). A symbol keeps its name,
-- whatever it looks like (a JIT's "stub+0x10"); so does every frame of a
-- stack without a `resolved` list. Folded and SVG output keep the addresses.
local C = require("moonrover.consts")
local folded = require("moonrover.profiler.writers.folded")

local _M = {}

local WIDTH = 80
local VALUE_COL = 12
local SHARE_COL = 7
-- The frames a user stack is walked to.
local MAX_USER_FRAMES = C.MR_MAX_STACK_DEPTH

local function add(map, name, v)
  map[name] = (map[name] or 0) + v
end

-- The name a frame is counted under: "[module]" for an address without a
-- symbol (resolved false), else the frame's own.
function _M.function_of(frame, resolved)
  local module = resolved == false and frame:match("^(.+)%+0x%x+$")
  if not module then return frame end
  return module:match("^%[.*%]$") or ("[" .. module .. "]")
end

-- Adds v to every distinct function of the stack, once even if recursive.
local function add_total(totals, frames, resolved, v)
  local seen = {}
  for i, frame in ipairs(frames) do
    local name = _M.function_of(frame, resolved[i])
    if not seen[name] then
      seen[name] = true
      add(totals, name, v)
    end
  end
end

local function ranked(map, total, n)
  local rows = {}
  for name, value in pairs(map) do
    rows[#rows + 1] = { name = name, value = value,
                        share = total > 0 and value / total or 0 }
  end
  table.sort(rows, function(a, b)
    if a.value ~= b.value then return a.value > b.value end
    return a.name < b.name
  end)
  for i = #rows, n + 1, -1 do rows[i] = nil end
  return rows
end

local function process_key(stack)
  return stack.pid or ("comm:" .. tostring(stack.comm))
end

-- Top n (default 10) functions by self and by total value, plus totals.
function _M.compute(stacks, meta, n)
  n = n or 10
  local total, nstacks, nprocs = 0, 0, 0
  local selfs, totals, procs = {}, {}, {}
  for _, stack in ipairs(stacks) do
    local v = folded.value_of(stack, meta)
    local frames, resolved = stack.frames or {}, stack.resolved or {}
    if v > 0 then
      total, nstacks = total + v, nstacks + 1
      if #frames > 0 then add(selfs, _M.function_of(frames[#frames], resolved[#frames]), v) end
      add_total(totals, frames, resolved, v)
      local key = process_key(stack)
      if not procs[key] then procs[key], nprocs = true, nprocs + 1 end
    end
  end
  return { total = total, processes = nprocs, stacks = nstacks,
           top_self = ranked(selfs, total, n),
           top_total = ranked(totals, total, n) }
end

-- 1234567 -> "1,234,567".
local function group(n)
  local s = string.format("%.0f", n)
  local sign, digits = s:match("^(-?)(%d+)$")
  digits = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return sign .. digits:gsub("^,", "")
end

local function format_time(ns)
  if ns >= 1e9 then return string.format("%.2f s", ns / 1e9) end
  if ns >= 1e5 then return string.format("%.1f ms", ns / 1e6) end
  return string.format("%.3f ms", ns / 1e6)
end

local function format_value(v, meta)
  if folded.uses_nanos(meta) then return format_time(v) end
  return group(v)
end

local function chars_of(s)
  local chars = {}
  for ch in s:gmatch("[^\128-\191][\128-\191]*") do chars[#chars + 1] = ch end
  return chars
end

-- Cuts s to at most width characters (UTF-8 aware), ending cut text in "..".
local function fit(s, width)
  local chars = chars_of(s)
  if #chars <= width then return s end
  return table.concat(chars, "", 1, math.max(width - 2, 0)) .. ".."
end

-- Cuts a function name to at most width characters by replacing its middle
-- with "..", keeping both the namespace and the function's own name.
local function fit_name(s, width)
  local chars = chars_of(s)
  if #chars <= width then return s end
  local tail = math.floor((width - 2) / 2)
  local head = width - 2 - tail
  return table.concat(chars, "", 1, head) .. ".." .. table.concat(chars, "", #chars - tail + 1)
end

local function lost_text(lost)
  local parts, sum = {}, 0
  for _, entry in ipairs(lost or {}) do
    local n = tonumber(entry.n) or 0
    if n > 0 then
      sum = sum + n
      parts[#parts + 1] = string.format("%s: %s", tostring(entry.reason or "unknown"), group(n))
    end
  end
  if sum == 0 then return "none" end
  return group(sum) .. " (" .. table.concat(parts, ", ") .. ")"
end

local function samples_text(stats, summary, meta)
  local n = tonumber(stats.samples)
  if not n and not folded.uses_nanos(meta) then n = summary.total end
  return n and group(n) or "unknown"
end

local function duration_text(stats)
  local d = tonumber(stats.duration)
  return d and string.format("%.1f s", d) or "unknown"
end

local function header_lines(summary, stats, meta)
  local off = folded.uses_nanos(meta)
  local run = string.format("duration: %s   samples taken: %s", duration_text(stats),
                            samples_text(stats, summary, meta))
  if off then run = run .. "   off-CPU time: " .. format_time(summary.total or 0) end
  local lines = {
    string.format("moonrover profile (%s)%s", off and "off-CPU" or "on-CPU",
                  meta.scope and ": " .. tostring(meta.scope) or ""),
    run,
    "samples lost: " .. lost_text(stats.lost),
    string.format("processes seen: %s   distinct stacks: %s",
                  group(summary.processes or 0), group(summary.stacks or 0)),
  }
  if (tonumber(stats.truncated) or 0) > 0 then
    lines[#lines + 1] = string.format("stacks cut at a frame that is not code: %s (code without frame pointers)",
                                      group(stats.truncated))
  end
  if stats.unwind then
    lines[#lines + 1] = _M.unwind_line(stats.unwind)
    lines[#lines + 1] = _M.cut_line(stats.unwind)
  end
  if stats.gone_after then
    lines[#lines + 1] = string.format("the profiled processes exited %.1f s into the profile: stopped then",
                                      stats.gone_after)
  end
  lines[#lines + 1] = "output: " .. tostring(stats.output or "none")
  return lines
end

-- How user stacks were walked: unwind = { mode = "cfi"|"fp", cfi = stacks by
-- unwind tables, fp = stacks by frame pointer while their process had no
-- tables yet, cut = stacks deeper than the walk's limit (their outermost
-- callers left out), tables = files loaded, table_bytes = their kernel
-- memory }.
function _M.unwind_line(u)
  if u.mode ~= "cfi" then
    return "user stacks: by frame pointers (--unwind fp)"
  end
  return string.format("user stacks: %s by CFI tables (%s files, %.1f MiB), %s by frame pointer",
    group(u.cfi or 0), group(u.tables or 0), (u.table_bytes or 0) / 1048576, group(u.fp or 0))
end

-- The line about user stacks deeper than the walk goes, or nil for none.
function _M.cut_line(u)
  if (u.cut or 0) > 0 then
    return string.format("user stacks cut at %d frames (their outermost callers left out): %s", MAX_USER_FRAMES,
      group(u.cut))
  end
  return nil
end

local function table_lines(heading, rows, meta)
  local name_width = WIDTH - 2 - VALUE_COL - SHARE_COL - 2
  local unit = folded.uses_nanos(meta) and "time" or "samples"
  local lines = { string.format("%-" .. (WIDTH - VALUE_COL - SHARE_COL - 1) .. "s%"
                                .. VALUE_COL .. "s %" .. SHARE_COL .. "s", heading, unit, "%") }
  for _, row in ipairs(rows) do
    local name = fit_name(row.name, name_width)
    local pad = string.rep(" ", name_width - #name:gsub("[\128-\191]", ""))
    lines[#lines + 1] = string.format("  %s%s %" .. VALUE_COL .. "s %" .. (SHARE_COL - 1) .. ".1f%%",
                                      name, pad, format_value(row.value, meta), row.share * 100)
  end
  return lines
end

local function append(dst, src)
  for _, line in ipairs(src) do dst[#dst + 1] = fit(line, WIDTH) end
end

-- Why a profile can be empty, in lines.
local function why_no_samples(meta)
  if folded.uses_nanos(meta) then
    return { "no samples were taken: no profiled thread blocked during the profile",
      "(off-CPU time counts waits: sleep, I/O, locks; a busy loop never waits)." }
  end
  if meta.scope and meta.scope ~= "all processes" then
    return { "no samples were taken: the profiled processes did not run on a CPU." }
  end
  return { "no samples were taken: nothing ran on a CPU." }
end

-- The one-screen text summary of a run.
function _M.format(summary, stats, meta)
  stats, meta = stats or {}, meta or {}
  local lines = {}
  append(lines, header_lines(summary, stats, meta))
  lines[#lines + 1] = ""
  if (summary.total or 0) <= 0 then
    append(lines, why_no_samples(meta))
  else
    append(lines, table_lines("top " .. #summary.top_self .. " by self", summary.top_self, meta))
    lines[#lines + 1] = ""
    append(lines, table_lines("top " .. #summary.top_total .. " by total", summary.top_total, meta))
  end
  return table.concat(lines, "\n") .. "\n"
end

return _M
