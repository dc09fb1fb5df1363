-- compare_chains.lua - compares the user-space caller chains of two folded
-- profiles of the same processes over the same time: moonrover's and perf's
-- (`perf record --call-graph dwarf`, folded by stackcollapse.py -- --kernel).
-- A chain is a stack's user frames, root to leaf, without the comm and the
-- kernel frames ("_[k]"), whose depth differs between the tools' kernels
-- views. Prints, as Markdown, perf's top N chains by samples with the share
-- each has in both profiles, then:
--   - found: the share of perf's top-N samples whose chain moonrover has too;
--   - overlap: over those chains, the sum of the smaller of the two shares
--     divided by perf's top-N share (100% = the same chains, equally often).
-- The tools name some frames differently, the same for every sample, so
-- frames are normalised the same way for both before chains are compared:
--   - an unnamed frame (perf's "[unknown]", moonrover's "module+0xOFFSET")
--     becomes "?";
--   - glibc's aliases lose their decoration: leading underscores, "GI_" and
--     "libc_", a trailing "_impl" or "64" (perf's __GI___libc_write,
--     __libc_start_main_impl and __libc_open64 are moonrover's write,
--     __libc_start_main and open);
--   - a frame equal to the one before it is dropped (perf repeats a function
--     for the inlined copy of it);
--   - BPF programs' frames ("bpf_prog_*", kernel frames perf does not mark)
--     and the folded suffixes' frames of the kernel are dropped.
-- A chain of moonrover matches one of perf's when both have the same frames
-- after that, "?" matching any frame.
--   usage: luajit scripts/bench/compare_chains.lua MOONROVER.folded PERF.folded [N]

local TOP = tonumber(arg[3]) or 20

local function normalise(name)
  if name == "" or name == "[unknown]" or name:match("^0x%x+$") or name:match("%+0x%x+$") then
    return "?"
  end
  name = name:gsub("^_+", ""):gsub("^GI_+", ""):gsub("^libc_", ""):gsub("_impl$", ""):gsub("64$", "")
  return name
end

-- Whether two normalised chains are the same, "?" matching any frame.
local function same_chain(a, b)
  if #a ~= #b then
    return false
  end
  for i = 1, #a do
    if a[i] ~= b[i] and a[i] ~= "?" and b[i] ~= "?" then
      return false
    end
  end
  return true
end

-- The user chain of one folded line and its count, or nil for a line that
-- is not a stack.
local function parse(line)
  local path, count = line:match("^(.*%S)%s+(%d+)%s*$")
  if not path then
    return nil
  end
  local frames, first = {}, true
  for part in (path .. ";"):gmatch("([^;]*);") do
    local name, tag = part:match("^(.*)_%[(%a)%]$")
    if not tag then
      name = part
    elseif tag ~= "j" and tag ~= "w" then
      name = nil
    end
    if name and not first and not name:match("^bpf_prog_") then
      name = normalise(name)
      if frames[#frames] ~= name then frames[#frames + 1] = name end
    end
    first = false
  end
  return table.concat(frames, ";"), tonumber(count)
end

-- chain -> samples, and the total.
local function load(path)
  local chains, total = {}, 0
  for line in assert(io.open(path)):lines() do
    local chain, n = parse(line)
    if chain then
      chains[chain] = (chains[chain] or 0) + n
      total = total + n
    end
  end
  return chains, total
end

local function ranked(chains)
  local rows = {}
  for chain, n in pairs(chains) do
    rows[#rows + 1] = { chain = chain, n = n }
  end
  table.sort(rows, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    return a.chain < b.chain
  end)
  return rows
end

-- The last k frames of a chain, for the table.
local function tail(chain, k)
  local frames = {}
  for f in chain:gmatch("[^;]+") do
    frames[#frames + 1] = f
  end
  local from = math.max(1, #frames - k + 1)
  local shown = table.concat(frames, ";", from)
  return (from > 1 and ("(" .. (from - 1) .. " more);") or "") .. shown
end

local function split(chain)
  local frames = {}
  for f in chain:gmatch("[^;]+") do
    frames[#frames + 1] = f
  end
  return frames
end

-- moonrover's samples in chains matching perf's chain.
local function matching(mr, chain)
  local want, n = split(chain), 0
  for c, count in pairs(mr) do
    if same_chain(split(c), want) then n = n + count end
  end
  return n
end

local mr, mr_total = load(arg[1])
local perf, perf_total = load(arg[2])
local top = ranked(perf)
local found, overlap, top_share = 0, 0, 0
print(string.format("samples: moonrover %d, perf %d", mr_total, perf_total))
print("")
print("| rank | perf's chain (leaf last) | depth | perf % | moonrover % |")
print("|---|---|---|---|---|")
for i = 1, math.min(TOP, #top) do
  local r = top[i]
  local p = r.n / math.max(perf_total, 1)
  local matched = matching(mr, r.chain)
  local m = matched / math.max(mr_total, 1)
  local depth = #split(r.chain)
  top_share = top_share + p
  if matched > 0 then
    found = found + p
  end
  overlap = overlap + math.min(p, m)
  print(string.format("| %d | %s | %d | %.1f | %.1f |", i, tail(r.chain, 4), depth, 100 * p, 100 * m))
end
print("")
print(string.format("perf's top %d chains hold %.1f%% of its samples; moonrover has the same chain for "
  .. "%.1f%% of them (found), overlap %.1f%%", TOP, 100 * top_share, 100 * found / math.max(top_share, 1e-9),
  100 * overlap / math.max(top_share, 1e-9)))
