-- unwind_table_spec.lua - compact unwind tables built from .eh_frame (and
-- .debug_frame), checked
-- against the disassembly of a -O2 -fomit-frame-pointer workload (the
-- CFA at a call site follows from the pushes and stack adjustments before
-- it) and at known places of Debian's libc.
local rt = require("moonrover.rt").with_test_api()
local shell = require("support.shell")
local skip = require("support.skip")
local capture = shell.capture
local ffi, lib = rt.ffi, rt.lib

local WORKLOADS = os.getenv("MOONROVER_WORKLOADS") or "build/workloads"
local WORKLOAD = WORKLOADS .. "/frameless"
local DEBUG_FRAME_ONLY = WORKLOADS .. "/frameless_debug_frame"
local LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
local K = { sp = lib.MR_UNWIND_CFA_SP, fp = lib.MR_UNWIND_CFA_FP, plt = lib.MR_UNWIND_CFA_PLT,
  signal = lib.MR_UNWIND_SIGNAL, fallback = lib.MR_UNWIND_FALLBACK }

local function open_table(path)
  local err = ffi.new("char[256]")
  local t = lib.mr_unwind_table_open(path, err, 256)
  assert(t ~= nil, ffi.string(err))
  return ffi.gc(t, lib.mr_unwind_table_free)
end

local function row_at(t, vaddr)
  local r = ffi.new("struct mr_unwind_row")
  assert.equals(0, lib.mr_unwind_table_lookup(t, vaddr, r))
  return { kind = r.kind, cfa = r.cfa_offset, fp_slot = r.fp_slot, pc = tonumber(r.pc) }
end

local function symbol(path, name, nm_flags)
  local out = capture("nm " .. (nm_flags or "") .. " " .. path)
  local addr = out:match("(%x+) [TtW] " .. name:gsub("[%-%.]", "%%%0") .. "\n")
  assert(addr, name .. " not found in " .. path)
  return tonumber(addr, 16)
end

-- The instructions of one function: { {addr, text} ... } from objdump.
local function disassembly(path, name)
  local out = capture("objdump -d --no-show-raw-insn " .. path)
  local body = assert(out:match("<" .. name .. ">:\n(.-)\n\n"), name .. " not disassembled")
  local insns = {}
  for addr, text in body:gmatch("%s*(%x+):%s*([^\n]+)") do
    insns[#insns + 1] = { addr = tonumber(addr, 16), text = text }
  end
  return insns
end

-- What the CFA and the saved frame pointer are just after each call in fn
-- (the return address): 8 for the return address, 8 per push, plus sub $N.
local function call_sites(path, fn)
  local sites, depth, fp_at = {}, 8, nil
  local insns = disassembly(path, fn)
  for i, insn in ipairs(insns) do
    local reg = insn.text:match("^push%s+%%(%w+)")
    local sub = insn.text:match("^sub%s+%$0x(%x+),%%rsp")
    if reg then
      depth = depth + 8
      if reg == "rbp" then fp_at = -depth end
    elseif sub then
      depth = depth + tonumber(sub, 16)
    elseif insn.text:match("^call") and insns[i + 1] then
      sites[#sites + 1] = { pc = insns[i + 1].addr, cfa = depth, fp_at = fp_at, text = insn.text }
    elseif insn.text:match("^ret") or insn.text:match("^pop") or insn.text:match("^add%s+%$0x%x+,%%rsp") then
      break -- the epilogue: the sites before it are enough
    end
  end
  return sites
end

describe("unwind tables", function()
  local it_libc = skip.guard(it, pending, io.open(LIBC) == nil and "no Debian libc at " .. LIBC or nil)

  it("know the CFA and the saved frame pointer at each call site of a frameless -O2 build", function()
    local t = open_table(WORKLOAD)
    local checked = 0
    for _, fn in ipairs({ "flock_loop", "heron_wait", "main" }) do
      for _, site in ipairs(call_sites(WORKLOAD, fn)) do
        local r = row_at(t, site.pc)
        assert.are.same({ fn, site.text, K.sp, site.cfa }, { fn, site.text, r.kind, r.cfa })
        assert.equals(site.fp_at and site.fp_at / 8 or 0, r.fp_slot)
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 4, "call sites checked: " .. checked)
  end)

  it("start every function with the CFA just above the return address", function()
    local t = open_table(WORKLOAD)
    for _, fn in ipairs({ "kestrel_spin", "heron_wait", "flock_loop", "main" }) do
      local r = row_at(t, symbol(WORKLOAD, fn))
      assert.are.same({ fn, K.sp, 8, 0 }, { fn, r.kind, r.cfa, r.fp_slot })
    end
  end)

  it("take the functions that only .debug_frame describes from it", function()
    local sections = capture("readelf -SW " .. DEBUG_FRAME_ONLY)
    assert.matches("%.debug_frame", sections)
    local frames = capture("readelf --debug-dump=frames " .. DEBUG_FRAME_ONLY)
    local eh = assert(frames:match("^(.-)Contents of the %.debug_frame section"), frames)
    local t = open_table(DEBUG_FRAME_ONLY)
    for _, fn in ipairs({ "kestrel_spin", "flock_loop", "main" }) do
      local at = symbol(DEBUG_FRAME_ONLY, fn)
      assert.is_nil(eh:match(string.format("pc=0*%x%%.%%.", at)), fn .. " is in .eh_frame: not the workload meant")
      local r = row_at(t, at)
      assert.are.same({ fn, K.sp, 8, 0 }, { fn, r.kind, r.cfa, r.fp_slot })
    end
    for _, site in ipairs(call_sites(DEBUG_FRAME_ONLY, "flock_loop")) do
      local r = row_at(t, site.pc)
      assert.are.same({ site.text, K.sp, site.cfa }, { site.text, r.kind, r.cfa })
    end
  end)

  it("recognise the PLT stubs' CFA expression", function()
    local plt = capture("readelf -SW " .. WORKLOAD):match("%] %.plt%s+PROGBITS%s+(%x+)")
    assert(plt, "no .plt in " .. WORKLOAD)
    local first_stub = tonumber(plt, 16) + 16
    assert.equals(K.plt, row_at(open_table(WORKLOAD), first_stub).kind)
  end)

  it("fall back to frame pointers between functions and count what they cannot hold", function()
    local t = open_table(WORKLOAD)
    local st = ffi.new("struct mr_unwind_table_stats")
    lib.mr_unwind_table_stats(t, st)
    assert.is_true(st.fdes > 0 and st.rows >= st.fdes and st.bytes == st.rows * 8)
    assert.equals(K.fallback, row_at(t, symbol(WORKLOAD, "_fini") + 0x1000000).kind)
  end)

  it_libc("cover Debian's libc, clock_nanosleep's entry among its functions", function()
    local t = open_table(LIBC)
    local st = ffi.new("struct mr_unwind_table_stats")
    lib.mr_unwind_table_stats(t, st)
    assert.is_true(st.fdes > 1000 and st.rows > 10000)
    local r = row_at(t, symbol(LIBC, "clock_nanosleep@@GLIBC_2.17", "-D"))
    assert.are.same({ K.sp, 8 }, { r.kind, r.cfa })
  end)

  it_libc("mark glibc's signal trampoline, found through its debug symbols", function()
    local id = capture("readelf -n " .. LIBC):match("Build ID: (%x+)")
    local debug = id and "/usr/lib/debug/.build-id/" .. id:sub(1, 2) .. "/" .. id:sub(3) .. ".debug"
    if not debug or not io.open(debug) then
      pending("no debug symbols for Debian's libc (libc6-dbg)")
      return
    end
    assert.equals(K.signal, row_at(open_table(LIBC), symbol(debug, "__restore_rt")).kind)
  end)
end)
