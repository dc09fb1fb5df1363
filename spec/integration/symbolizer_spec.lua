-- symbolizer_spec.lua - the symbolizer through the FFI. Fixture programs are
-- built with cc/g++ into a temporary directory, started as child processes
-- that print the runtime addresses of their functions, then resolved.
local rt = require("moonrover.rt").with_test_api()
local files = require("support.files")
local shell = require("support.shell")
local sh, capture = shell.must, shell.capture
local read_file, write_file = files.read, files.write
local ffi, lib = rt.ffi, rt.lib

local SOURCES = debug.getinfo(1, "S").source:match("^@(.*/)") .. "../fixtures/symbolizer/"
local CFLAGS = "-O0 -g -fno-omit-frame-pointer"

local function build_fixtures(dir)
  local cc = "cc " .. CFLAGS .. " "
  sh(cc .. "-pie -fPIE " .. SOURCES .. "target.c -o " .. dir .. "/pie")
  sh(cc .. "-no-pie -fno-PIE " .. SOURCES .. "target.c -o " .. dir .. "/nopie")
  sh(cc .. "-shared -fPIC " .. SOURCES .. "fixlib.c -o " .. dir .. "/libfixlib.so")
  sh(cc .. SOURCES .. "uselib.c -o " .. dir .. "/uselib -L" .. dir .. " -lfixlib -Wl,-rpath," .. dir)
  sh("g++ " .. CFLAGS .. " " .. SOURCES .. "klass.cpp -o " .. dir .. "/klass")
  -- PLT stubs in .plt.sec, as -fcf-protection builds (Ubuntu's, say) have them
  sh(cc .. "-pie -fPIE -fcf-protection=full -Wl,-z,ibtplt " .. SOURCES .. "target.c -o " .. dir .. "/pie_ibt")
  -- stripped, no build-id: symbols only through .gnu_debuglink (CRC checked)
  sh(cc .. "-Wl,--build-id=none " .. SOURCES .. "target.c -o " .. dir .. "/stripped")
  sh("cd " .. dir .. " && objcopy --only-keep-debug stripped stripped.debug && strip stripped"
    .. " && objcopy --add-gnu-debuglink=stripped.debug stripped")
  -- the same stripped binary beside a debug file of the same name whose CRC
  -- differs and whose symbols would name the function wrongly
  sh("mkdir " .. dir .. "/bad && cp " .. dir .. "/stripped " .. dir .. "/bad/stripped")
  sh(cc .. "-Wl,--build-id=none -Dtarget_known_function=impostor_function " .. SOURCES
    .. "target.c -o " .. dir .. "/impostor")
  sh("objcopy --only-keep-debug " .. dir .. "/impostor " .. dir .. "/bad/stripped.debug")
  -- a root of its own (as a container has), holding a static program
  sh("mkdir -p " .. dir .. "/jail/bin && " .. cc .. "-static-pie " .. SOURCES .. "target.c -o " .. dir
    .. "/jail/bin/jailed")
end

-- Starts a fixture; returns {pid, vals} once it printed "ready=".
local function spawn(cmd, live)
  local f = assert(io.popen("echo $$; exec " .. cmd, "r"))
  local proc = { pid = tonumber(f:read("*l")), f = f, vals = {} }
  for line in f:lines() do
    local k, v = line:match("^(%w+)=(%x+)$")
    if k == "ready" then break end
    if k then proc.vals[k] = tonumber(v, 16) end
  end
  live[#live + 1] = proc
  return proc
end

local function stop(proc)
  if proc.f then
    os.execute("kill -9 " .. proc.pid .. " 2>/dev/null")
    proc.f:close() -- waits for the child
    proc.f = nil
  end
end

local function mapping_of(pid, addr)
  for line in io.lines("/proc/" .. pid .. "/maps") do
    local s, e, off, path = line:match("^(%x+)-(%x+) %S+ (%x+) %S+ %d+%s*(.*)$")
    if addr >= tonumber(s, 16) and addr < tonumber(e, 16) then
      return { start = tonumber(s, 16), pgoff = tonumber(off, 16), path = path }
    end
  end
end

-- The address of _init (a symbol without a size) in a PIE fixture, which
-- maps its code at file offset = address.
local function init_offset(path)
  return tonumber(capture("readelf -sW " .. path):match("(%x+)%s+0 FUNC%s+%S+%s+%S+%s+%d+ _init\n"), 16)
end

local function build_id_of(path)
  return capture("readelf -n " .. path):match("Build ID: (%x+)")
end

local function new_symbolizer(kernel)
  return ffi.gc(assert(rt.call(lib.mr_symbolizer_new, kernel or 0)), lib.mr_symbolizer_free)
end

-- 0, or nil and the runtime's message.
local function track(s, pid)
  return rt.call(lib.mr_symbolizer_track, s, pid)
end

local function str(p)
  if p == nil then return nil end
  return ffi.string(p)
end

local function copy(out)
  return { name = str(out.name), module = str(out.module), build_id = str(out.build_id),
           offset = out.offset, kind = tonumber(out.kind) }
end

-- 0 (or nil), the symbol as a table, and the runtime's message on failure.
local function resolve(s, pid, addr, flags)
  local out = ffi.new("struct mr_symbol")
  local rc, err = rt.call(lib.mr_symbolizer_resolve, s, pid, addr, flags or 0, out)
  return rc, copy(out), err
end

local function resolve_file(s, path, offset)
  local out = ffi.new("struct mr_symbol")
  local rc, err = rt.call(lib.mr_symbolizer_resolve_file, s, path, offset, out)
  return rc, copy(out), err
end

local function stats(s)
  local st = ffi.new("struct mr_symbolizer_stats")
  lib.mr_symbolizer_stats(s, st)
  return { files_parsed = tonumber(st.files_parsed), hits = tonumber(st.file_cache_hits),
           processes = tonumber(st.processes), maps_reads = tonumber(st.maps_reads), roots = tonumber(st.roots),
           unresolved = tonumber(st.unresolved), not_code = tonumber(st.not_code) }
end

local function hex64(h)
  local v = ffi.new("uint64_t", 0)
  for c in h:gmatch("%x") do v = v * 16 + tonumber(c, 16) end
  return v
end

describe("symbolizer", function()
  local dir
  local live = {}

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    sh("mkdir -m 700 " .. dir)
    build_fixtures(dir)
  end)

  teardown(function()
    sh("rm -rf " .. dir)
  end)

  after_each(function()
    for _, proc in ipairs(live) do stop(proc) end
    live = {}
  end)

  local function expect_user(rc, sym, name, module)
    assert.equals(0, rc)
    assert.equals(name, sym.name)
    assert.equals(module, sym.module)
    assert.equals(lib.MR_FRAME_USER, sym.kind)
  end

  local function expect_resolves(s, pid, addr, name, module)
    local rc, sym = resolve(s, pid, addr)
    expect_user(rc, sym, name, module)
  end

  it("resolves a function of a PIE executable with module, offset and build-id", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    assert.equals(0, track(s, p.pid))
    local addr = p.vals.known
    local rc, sym = resolve(s, p.pid, addr + 3)
    expect_user(rc, sym, "target_known_function", dir .. "/pie")
    local m = mapping_of(p.pid, addr)
    assert.equals(addr + 3 - m.start + m.pgoff, tonumber(sym.offset))
    assert.equals(build_id_of(dir .. "/pie"), sym.build_id)
  end)

  it("resolves a function of a non-PIE executable", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/nopie", live)
    assert.equals(0, track(s, p.pid))
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/nopie")
  end)

  it("takes a snapshot on demand when the pid was not tracked", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/pie")
    assert.equals(1, stats(s).processes)
  end)

  it("resolves a shared library function with the library as module", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/uselib", live)
    local rc, sym = resolve(s, p.pid, p.vals.lib)
    expect_user(rc, sym, "fixture_lib_function", dir .. "/libfixlib.so")
    local m = mapping_of(p.pid, p.vals.lib)
    assert.equals(p.vals.lib - m.start + m.pgoff, tonumber(sym.offset))
  end)

  it("demangles C++ and Rust legacy names", function()
    local s = new_symbolizer()
    local cpp = spawn(dir .. "/klass", live)
    expect_resolves(s, cpp.pid, cpp.vals.method, "ns::Klass::method(int)", dir .. "/klass")
    local p = spawn(dir .. "/pie", live)
    expect_resolves(s, p.pid, p.vals.rust, "core::fmt::write", dir .. "/pie")
  end)

  it("loads a stripped binary's symbols through .gnu_debuglink, checking the CRC", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/stripped", live)
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/stripped")
    local m = mapping_of(p.pid, p.vals.known)
    local offset = p.vals.known - m.start + m.pgoff
    local rc, sym = resolve_file(s, dir .. "/bad/stripped", offset)
    assert.equals(0, rc)
    assert.is_nil(sym.name)
    assert.equals(dir .. "/bad/stripped", sym.module)
    assert.equals("", sym.build_id)
  end)

  it("resolves libc through its build-id debug file (libc6-dbg)", function()
    local base, libc
    for line in io.lines("/proc/self/maps") do
      local s, off, path = line:match("^(%x+)-%x+ %S+ (%x+) %S+ %d+%s+(/.*/libc%.so%.6)$")
      if s and tonumber(off, 16) == 0 then base, libc = tonumber(s, 16), path end
    end
    assert.is_not_nil(libc)
    local bid = build_id_of(libc)
    local debug = "/usr/lib/debug/.build-id/" .. bid:sub(1, 2) .. "/" .. bid:sub(3) .. ".debug"
    if not read_file(debug) then
      pending("no libc debug file at " .. debug .. " (libc6-dbg not installed)")
      return
    end
    local vaddr = capture("nm " .. debug):match("(%x+) t __libc_start_call_main\n")
    local pid = tonumber(read_file("/proc/self/stat"):match("^(%d+)"))
    local s = new_symbolizer()
    local rc, sym = resolve(s, pid, base + tonumber(vaddr, 16) + 1)
    expect_user(rc, sym, "__libc_start_call_main", libc)
    assert.equals(bid, sym.build_id)
  end)

  it("keeps resolving a tracked process after it exited, until forget", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    assert.equals(0, track(s, p.pid))
    assert.equals(0, stats(s).files_parsed) -- files are read when a name is needed
    stop(p)
    assert.is_nil(io.open("/proc/" .. p.pid .. "/maps", "r"))
    local rc, sym = resolve(s, p.pid, p.vals.known)
    expect_user(rc, sym, "target_known_function", dir .. "/pie")
    lib.mr_symbolizer_forget(s, p.pid)
    local forgotten, _, err = resolve(s, p.pid, p.vals.known)
    assert.is_nil(forgotten)
    assert.matches("No such process$", err)
  end)

  it("keeps returned names valid after forget", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local out = ffi.new("struct mr_symbol")
    assert.equals(0, rt.call(lib.mr_symbolizer_resolve, s, p.pid, p.vals.known, 0, out))
    lib.mr_symbolizer_forget(s, p.pid)
    stop(p)
    assert.equals("target_known_function", ffi.string(out.name))
    assert.equals(dir .. "/pie", ffi.string(out.module))
  end)

  it("reads the mappings again for an address mapped after tracking", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    assert.equals(0, track(s, p.pid))
    os.execute("kill -USR1 " .. p.pid)
    local late = tonumber(p.f:read("*l"):match("^late=(%x+)$"), 16)
    local rc, sym = resolve(s, p.pid, late + 8)
    assert.equals(0, rc)
    assert.equals("[anon]", sym.module)
    assert.equals(2, stats(s).maps_reads)
  end)

  it("resolves a deleted binary through map_files", function()
    sh("cp " .. dir .. "/pie " .. dir .. "/victim")
    local p = spawn(dir .. "/victim", live)
    os.remove(dir .. "/victim")
    local s = new_symbolizer()
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/victim")
  end)

  it("parses a binary once for many processes (build-id and inode identity)", function()
    local s = new_symbolizer()
    local procs = { spawn(dir .. "/pie", live), spawn(dir .. "/pie", live), spawn(dir .. "/pie", live) }
    for _, p in ipairs(procs) do
      assert.equals(0, track(s, p.pid))
    end
    local tracked = stats(s)
    assert.equals(3, tracked.processes)
    assert.equals(3, tracked.maps_reads)
    assert.equals(1, tracked.roots) -- one shared root directory
    expect_resolves(s, procs[1].pid, procs[1].vals.known, "target_known_function", dir .. "/pie")
    local first = stats(s)
    assert.equals(1, first.files_parsed)
    for _, p in ipairs(procs) do
      expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/pie")
    end
    local after = stats(s)
    assert.equals(first.files_parsed, after.files_parsed)
    assert.is_true(after.hits >= first.hits + 2)
    -- no build-id: identity by device and inode
    local a, b = spawn(dir .. "/stripped", live), spawn(dir .. "/stripped", live)
    expect_resolves(s, a.pid, a.vals.known, "target_known_function", dir .. "/stripped")
    local parsed = stats(s).files_parsed
    assert.equals(parsed - 1, after.files_parsed)
    expect_resolves(s, b.pid, b.vals.known, "target_known_function", dir .. "/stripped")
    assert.equals(parsed, stats(s).files_parsed)
  end)

  it("names a chrooted process's frames after it exited", function()
    local s = new_symbolizer()
    local p = spawn("chroot " .. dir .. "/jail /bin/jailed", live)
    assert.equals(0, track(s, p.pid))
    assert.equals(1, stats(s).roots)
    stop(p)
    -- the kernel names the file as this process sees it
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/jail/bin/jailed")
    lib.mr_symbolizer_forget(s, p.pid)
    assert.equals(0, stats(s).roots) -- the last process of a root closes it
  end)

  -- Why a container's root cannot be made here, or nil: a mount namespace
  -- needs root, and in a chroot (a directory, not a mount point, as root)
  -- neither the namespace's private propagation nor pivot_root is allowed.
  local function no_container_root()
    if capture("id -u"):match("^0") == nil then
      return "a mount namespace needs root (CAP_SYS_ADMIN)"
    end
    local probe = os.tmpname()
    os.remove(probe)
    local ok = os.execute("mkdir " .. probe .. " && unshare -m --propagation private sh -c 'mount -t tmpfs probe "
      .. probe .. " && mkdir " .. probe .. "/old && cd " .. probe .. " && pivot_root . old' 2>/dev/null")
    os.execute("rmdir " .. probe .. " 2>/dev/null")
    if ok ~= 0 and ok ~= true then
      return "a mount namespace with a root of its own cannot be made here (a chroot: its root is not a mount point)"
    end
    return nil
  end

  local as_container = require("support.skip").guard(it, pending, no_container_root())

  as_container("names a container's frames through its root, after it and its mounts are gone", function()
    -- a root only its own mount namespace has, as a container's
    local root = dir .. "/container"
    sh("mkdir " .. root)
    local p = spawn("unshare -m --propagation private sh -c 'mount -t tmpfs rootfs " .. root
      .. " && mkdir " .. root .. "/bin " .. root .. "/old && cp " .. dir .. "/jail/bin/jailed " .. root
      .. "/bin/ && cd " .. root .. " && pivot_root . old && exec /bin/jailed'", live)
    local s = new_symbolizer()
    assert.equals(0, track(s, p.pid))
    stop(p)
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", "/bin/jailed")
  end)

  it("parses no more files than allowed, and names them once allowed again", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    lib.mr_symbolizer_limit_parses(s, 0)
    local rc, _, err = resolve(s, p.pid, p.vals.known)
    assert.is_nil(rc)
    assert.matches("pie is not parsed yet and no more files may be parsed now", err, 1, true)
    assert.equals(0, stats(s).files_parsed)
    lib.mr_symbolizer_limit_parses(s, 1)
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/pie")
    assert.equals(1, stats(s).files_parsed)
    lib.mr_symbolizer_limit_parses(s, 0) -- a parsed file needs no budget
    expect_resolves(s, p.pid, p.vals.known, "target_known_function", dir .. "/pie")
  end)

  it("names JIT code from /tmp/perf-PID.map and reports other anonymous memory", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local map = "/tmp/perf-" .. p.pid .. ".map"
    write_file(map, string.format("%x 40 jitted_function\n", p.vals.jit))
    local ok, err = pcall(function()
      local rc, sym = resolve(s, p.pid, p.vals.jit + 0x10)
      assert.equals(0, rc)
      assert.equals("jitted_function", sym.name)
      assert.equals(lib.MR_FRAME_JIT, sym.kind)
      assert.equals(map, sym.module)
      rc, sym = resolve(s, p.pid, p.vals.jit + 0x800)
      assert.equals(0, rc)
      assert.is_nil(sym.name)
      assert.equals("[anon]", sym.module)
      assert.equals(0x800, tonumber(sym.offset))
    end)
    os.remove(map)
    assert(ok, err)
  end)

  it("names vDSO functions from the kernel's vDSO image", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local lo, hi
    for line in io.lines("/proc/" .. p.pid .. "/maps") do
      local a, b = line:match("^(%x+)%-(%x+) r%-xp .*%[vdso%]$")
      if a then lo, hi = tonumber(a, 16), tonumber(b, 16) end
    end
    assert.is_truthy(lo, "no executable [vdso] mapping")
    local names = {}
    for addr = lo, hi - 1, 8 do
      local rc, sym = resolve(s, p.pid, addr)
      if rc == 0 and sym.name then
        assert.equals("[vdso]", sym.module)
        names[sym.name] = true
      end
    end
    assert.is_true(names.clock_gettime or names.__vdso_clock_gettime or false)
  end)

  it("resolves kernel addresses from /proc/kallsyms", function()
    local addr, name
    for line in io.lines("/proc/kallsyms") do
      local a, n = line:match("^(%x+) T (vfs_read)$")
      if a then addr, name = a, n break end
    end
    if not addr then
      pending("/proc/kallsyms has no vfs_read text symbol")
      return
    end
    if hex64(addr) == 0 then
      pending("/proc/kallsyms shows zero addresses (not root or kptr_restrict)")
      return
    end
    local s = new_symbolizer(1)
    local out = ffi.new("struct mr_symbol")
    -- the caller reuses one struct: a user frame of the program first
    local p = spawn(dir .. "/pie", live)
    assert.equals(0, rt.call(lib.mr_symbolizer_resolve, s, p.pid, p.vals.known, 0, out))
    assert.equals(1, out.executable)
    local kaddr = hex64(addr) + 4
    assert.equals(0, rt.call(lib.mr_symbolizer_resolve_kernel, s, kaddr, 0, out))
    assert.equals(name, ffi.string(out.name))
    assert.equals("[kernel.kallsyms]", ffi.string(out.module))
    assert.is_true(out.offset == kaddr)
    assert.equals(lib.MR_FRAME_KERNEL, tonumber(out.kind))
    assert.equals(0, out.executable) -- nothing of the program's left behind
    local nok = new_symbolizer(0)
    assert.same({ nil, "this symbolizer was made without kernel symbols" },
      { rt.call(lib.mr_symbolizer_resolve_kernel, nok, kaddr, 0, out) })
  end)

  it("leaves an address outside any function unresolved but names the module", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local m = mapping_of(p.pid, p.vals.known)
    -- inside _init, which has no size: its first byte only is named
    local inside = init_offset(dir .. "/pie") + 4
    local rc, sym = resolve(s, p.pid, m.start - m.pgoff + inside)
    assert.equals(0, rc)
    assert.is_nil(sym.name)
    assert.equals(dir .. "/pie", sym.module)
    assert.equals(inside, tonumber(sym.offset))
    local before = stats(s)
    local err
    rc, sym, err = resolve(s, p.pid, 0x10)
    assert.is_nil(rc)
    assert.equals("0x10 is not code of process " .. p.pid .. ": no mapping holds it", err)
    assert.is_nil(sym.module)
    assert.equals(lib.MR_FRAME_UNKNOWN, sym.kind)
    local after = stats(s)
    assert.equals(before.not_code + 1, after.not_code)
    -- the live process's mappings were read again once, in case they grew
    assert.equals(before.maps_reads + 1, after.maps_reads)
    lib.mr_symbolizer_forget(s, p.pid)
    assert.equals(0, stats(s).processes)
  end)

  it("resolves file offsets of an ELF file directly", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local m = mapping_of(p.pid, p.vals.known)
    local rc, sym = resolve_file(s, dir .. "/pie", p.vals.known - m.start + m.pgoff)
    expect_user(rc, sym, "target_known_function", dir .. "/pie")
    assert.equals(build_id_of(dir .. "/pie"), sym.build_id)
  end)

  -- The stubs objdump labels "name@plt" in a section, as {offset, name}.
  local function plt_stubs(path, section)
    local stubs = {}
    for addr, name in capture("objdump -d --section=" .. section .. " " .. path):gmatch("\n(%x+) <([^>]+@plt)>:") do
      stubs[#stubs + 1] = { offset = tonumber(addr, 16), name = name }
    end
    return stubs
  end

  it("names PLT stubs name@plt, in .plt and in .plt.sec", function()
    local s = new_symbolizer()
    for path, section in pairs({ [dir .. "/pie"] = ".plt", [dir .. "/pie_ibt"] = ".plt.sec" }) do
      local stubs = plt_stubs(path, section)
      assert.is_true(#stubs >= 5, section .. " of " .. path .. " has " .. #stubs .. " stubs")
      for _, stub in ipairs(stubs) do
        -- PIE fixtures map their first segments at file offset = address
        local rc, sym = resolve_file(s, path, stub.offset + 4)
        assert.equals(0, rc)
        assert.equals(stub.name, sym.name)
      end
    end
  end)

  it("names a return address by the call before it", function()
    local s = new_symbolizer()
    -- caller_a ends with a call that never returns, caller_b right after it
    local p = spawn((os.getenv("MOONROVER_WORKLOADS") or "build/workloads") .. "/noreturn_caller 30", live)
    local _, sym = resolve(s, p.pid, p.vals.b)
    assert.equals("caller_b", sym.name)
    _, sym = resolve(s, p.pid, p.vals.b, lib.MR_SYMBOL_RETURN_ADDRESS)
    assert.equals("caller_a", sym.name)
  end)

  it("refuses addresses that are not code of a known process", function()
    local s = new_symbolizer()
    local p = spawn(dir .. "/pie", live)
    local stack
    for line in io.lines("/proc/" .. p.pid .. "/maps") do
      stack = stack or line:match("^(%x+)%-%x+ .*%[stack%]$")
    end
    local rc, sym, err = resolve(s, p.pid, tonumber(stack, 16) + 64, lib.MR_SYMBOL_RETURN_ADDRESS)
    assert.is_nil(rc)
    assert.is_nil(sym.name)
    assert.matches("^0x%x+ is not code of process " .. p.pid .. ": %[stack%] is not executable$", err)
    rc, sym, err = resolve(s, p.pid, 0x10)
    assert.is_nil(rc)
    assert.is_nil(sym.module)
    assert.equals("0x10 is not code of process " .. p.pid .. ": no mapping holds it", err)
    assert.equals(2, stats(s).not_code)
  end)

  it("gives a symbol without a size its own address only", function()
    local s = new_symbolizer()
    local init = init_offset(dir .. "/pie")
    local plt0 = plt_stubs(dir .. "/pie", ".plt")[1].offset - 16
    local _, sym = resolve_file(s, dir .. "/pie", init)
    assert.equals("_init", sym.name)
    _, sym = resolve_file(s, dir .. "/pie", init + 4)
    assert.is_nil(sym.name)
    _, sym = resolve_file(s, dir .. "/pie", plt0 + 2)
    assert.is_nil(sym.name, "the PLT header is not part of _init")
  end)

  it("gives errors, not crashes, for malformed files and missing processes", function()
    local s = new_symbolizer()
    write_file(dir .. "/garbage", string.rep("not an ELF file\n", 100))
    write_file(dir .. "/empty", "")
    write_file(dir .. "/truncated", read_file(dir .. "/pie"):sub(1, 200))
    local function refused(path, why)
      local rc, _, err = resolve_file(s, path, 0)
      assert.is_nil(rc)
      assert.equals("cannot read the symbols of " .. path .. ": " .. why, err)
    end
    refused(dir .. "/garbage", "Exec format error")
    refused(dir .. "/empty", "Exec format error")
    refused(dir .. "/missing", "No such file or directory")
    refused(dir, "Exec format error")
    local _, sym = resolve_file(s, dir .. "/truncated", 0x1139)
    assert.is_nil(sym.name)
    local dead = spawn(dir .. "/pie", live)
    stop(dead)
    local gone = "cannot read the mappings of process " .. dead.pid .. ": No such process"
    assert.same({ nil, gone }, { track(s, dead.pid) })
    local rc, _, err = resolve(s, dead.pid, 0x1000)
    assert.is_nil(rc)
    assert.equals("no mapping of process " .. dead.pid .. " holds 0x1000: No such process", err)
    assert.is_nil((track(s, -1)))
    assert.equals(0, stats(s).processes)
  end)
end)

describe("symbolizer with ROVER_HOST_PROC_MAPPING", function()
  for _, decl in ipairs({ "int setenv(const char *, const char *, int);", "int unsetenv(const char *);",
    "int getpid(void);" }) do
    pcall(ffi.cdef, decl)
  end

  after_each(function()
    ffi.C.unsetenv("ROVER_HOST_PROC_MAPPING")
  end)

  it("reads mappings through the mapped proc directory", function()
    local pid = ffi.C.getpid()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 700 " .. dir .. " && ln -s /proc/" .. pid .. " " .. dir .. "/" .. pid) == 0)
    local s = new_symbolizer()
    ffi.C.setenv("ROVER_HOST_PROC_MAPPING", dir .. "/missing", 1)
    assert.is_nil((track(s, pid)))
    ffi.C.setenv("ROVER_HOST_PROC_MAPPING", dir, 1)
    assert.same(0, track(s, pid))
    os.execute("rm -rf " .. dir)
  end)
end)
