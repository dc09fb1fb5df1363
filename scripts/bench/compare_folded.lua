-- compare_folded.lua - compares two folded-stack profiles of the same processes
-- over the same time: moonrover's (`moonrover profile -o X.folded`) and perf's
-- (`perf script -s stackcollapse.py -- --kernel`). Lines are
-- "comm;root;...;leaf COUNT". Prints, as Markdown:
--   - per tool: total samples, the unsymbolized share and the kernel share
--     (of samples, judged by the leaf frame);
--   - the top N functions by self share (the leaf frame's share of samples),
--     both tools side by side;
--   - the share the named functions of each top-N list hold, and the
--     agreement: over the named functions present in both top-N lists, the
--     sum of the smaller of the two shares (100% = identical top lists).
--   usage: luajit scripts/bench/compare_folded.lua MOONROVER.folded PERF.folded [N]

local TOP = tonumber(arg[3]) or 15

-- Every leaf without a function name is counted under this one label, for
-- both tools, so that perf's single "[unknown]" and moonrover's many
-- "module+0xOFFSET" names are compared as the same thing.
local UNSYMBOLIZED = "(unsymbolized)"

-- Normalisation, identical for both tools. The only rewrite is dropping the
-- annotation suffixes of the folded format, "_[k]" (kernel: moonrover always,
-- perf with stackcollapse.py's --kernel), "_[j]" (JIT), "_[i]" (inlined) and
-- "_[w]" (waker); "_[k]" is remembered to tell kernel leaves from user ones.
-- Names are otherwise kept as printed: "foo@plt" stays distinct from "foo"
-- (both tools name PLT stubs that way), ".isra.0"/".cold" clones stay as is.
local function normalise(frame)
  local name, tag = frame:match("^(.*)_%[(%a)%]$")
  if name and tag:find("^[kjiw]$") then
    return name, tag == "k"
  end
  return frame, false
end

-- A leaf is unsymbolized when it has no function name, in any of the forms
-- a folded file holds then: "[unknown]" (perf for any unnamed address,
-- moonrover outside any module), "module+0xOFFSET" (moonrover inside a module
-- without the symbol, e.g. "python3.11+0x19de7c"), a raw address "0x1f2e3d"
-- or an empty name. A stack with no frame at all (only the comm) counts as
-- unsymbolized too.
local function is_unsymbolized(name)
  return name == "" or name == "[unknown]" or name:find("^0x%x+$") ~= nil or name:find("^%S+%+0x%x+$") ~= nil
end

-- Reads one folded file into { total, self = {name = count}, unsym, kernel }.
local function read_folded(path)
  local fh = assert(io.open(path, "rb"))
  local p = { total = 0, self = {}, unsym = 0, kernel = 0 }
  local lineno = 0
  for line in fh:lines() do
    lineno = lineno + 1
    local stack, count = line:match("^(.-)%s+(%d+)%s*$")
    if not stack then
      error(string.format("%s:%d: not a folded line: %s", path, lineno, line))
    end
    count = tonumber(count)
    -- The first field is the comm; the leaf is the last field after it.
    local leaf = stack:match(";([^;]*)$") or ""
    local name, kernel = normalise(leaf)
    if is_unsymbolized(name) then
      name = UNSYMBOLIZED
      p.unsym = p.unsym + count
    end
    if kernel then
      p.kernel = p.kernel + count
    end
    p.self[name] = (p.self[name] or 0) + count
    p.total = p.total + count
  end
  fh:close()
  return p
end

local function share(p, count)
  return p.total > 0 and 100 * count / p.total or 0
end

-- The first n { name, pct } by self share, largest first, ties by name.
local function top(p, n)
  local rows = {}
  for name, count in pairs(p.self) do
    rows[#rows + 1] = { name = name, pct = share(p, count) }
  end
  table.sort(rows, function(a, b)
    if a.pct ~= b.pct then
      return a.pct > b.pct
    end
    return a.name < b.name
  end)
  local out = {}
  for i = 1, math.min(n, #rows) do
    out[i] = rows[i]
  end
  return out
end

local function cell(row)
  if not row then
    return "|  |  "
  end
  return string.format("| `%s` | %.1f ", (row.name:gsub("|", "\\|")), row.pct)
end

local mr_path, perf_path = arg[1], arg[2]
if not mr_path or not perf_path then
  io.stderr:write("usage: luajit scripts/bench/compare_folded.lua MOONROVER.folded PERF.folded [N]\n")
  os.exit(2)
end
local mr, perf = read_folded(mr_path), read_folded(perf_path)
local mr_top, perf_top = top(mr, TOP), top(perf, TOP)

-- The share of samples the named functions of a top list hold: the most the
-- agreement below can reach.
local function named_share(rows)
  local sum = 0
  for _, row in ipairs(rows) do
    if row.name ~= UNSYMBOLIZED then
      sum = sum + row.pct
    end
  end
  return sum
end

print("| | moonrover | perf |")
print("|---|---|---|")
print(string.format("| samples | %d | %d |", mr.total, perf.total))
print(string.format("| unsymbolized leaf | %.1f%% | %.1f%% |", share(mr, mr.unsym), share(perf, perf.unsym)))
print(string.format("| kernel leaf | %.1f%% | %.1f%% |", share(mr, mr.kernel), share(perf, perf.kernel)))
print(string.format("| named functions of the top %d | %.1f%% | %.1f%% |", TOP, named_share(mr_top),
  named_share(perf_top)))
print("")
print("| rank | moonrover function | self % | perf function | self % |")
print("|---|---|---|---|---|")
for i = 1, math.max(#mr_top, #perf_top) do
  print(string.format("| %d %s%s|", i, cell(mr_top[i]), cell(perf_top[i])))
end

-- Agreement counts named functions only: both tools failing to name a leaf
-- is not agreement on where the time went.
local perf_pct = {}
for _, row in ipairs(perf_top) do
  perf_pct[row.name] = row.pct
end
local agreement, common = 0, 0
for _, row in ipairs(mr_top) do
  if row.name ~= UNSYMBOLIZED and perf_pct[row.name] then
    agreement = agreement + math.min(row.pct, perf_pct[row.name])
    common = common + 1
  end
end
print("")
print(string.format("agreement of the top %d: %.1f%% of samples (%d named functions in both lists)", TOP, agreement,
  common))
