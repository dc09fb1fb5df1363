-- proc_info_spec.lua - process facts through the FFI: the pid list, files of
-- /proc/PID, the exe link, the start time, the symbol check, and a fake proc
-- tree named by ROVER_HOST_PROC_MAPPING.
local rt = require("moonrover.rt").with_test_api()
local files = require("support.files")
local proc_mapping = require("support.proc_mapping")
local shell = require("support.shell")
local read_file, write_file = files.read, files.write
local sh, capture = shell.must, shell.capture
local ffi, lib = rt.ffi, rt.lib

ffi.cdef("int getpid(void);")

local function uptime_ns()
  local secs = assert(read_file("/proc/uptime")):match("^(%d+%.%d+)")
  return tonumber(secs) * 1e9
end

-- Every pid, growing the room until the result is below it.
local function list_pids()
  local max = 64
  while true do
    local pids = ffi.new("int32_t[?]", max)
    local n = assert(rt.call(lib.mr_proc_list, pids, max))
    if n < max then
      local set = {}
      for i = 0, n - 1 do set[pids[i]] = true end
      return set, n
    end
    max = max * 2
  end
end

-- The length and the text, or nil and the runtime's message.
local function read(pid, file, len)
  local buf = ffi.new("char[?]", len or 4096)
  local n, err = rt.call(lib.mr_proc_read, pid, file, buf, len or 4096)
  return n, n and ffi.string(buf) or err
end

local function link(pid, what, len)
  local buf = ffi.new("char[?]", len or 4096)
  local n, err = rt.call(lib.mr_proc_link, pid, what, buf, len or 4096)
  return n, n and ffi.string(buf) or err
end

local function has_symbols(pid)
  return rt.call(lib.mr_proc_has_symbols, pid)
end

-- Asserts a call was refused, with the strerror text of why in its message.
local function refused(why, n, err)
  assert.is_nil(n)
  assert.matches(why, err, 1, true)
end

-- Starts `sleep 30` and waits until the shell has exec'd it.
local function start_sleep()
  local f = assert(io.popen("echo $$; exec sleep 30", "r"))
  local child = { pid = tonumber(f:read("*l")), f = f }
  for _ = 1, 1000 do
    if read_file("/proc/" .. child.pid .. "/comm") == "sleep\n" then return child end
    lib.mr_sys_sleep_ms(5)
  end
  error("sleep did not start")
end

local function stop(child)
  os.execute("kill -9 " .. child.pid .. " 2>/dev/null")
  child.f:close() -- reaps it
end

-- A pid that existed and is gone: a shell that exited and was reaped.
local function dead_pid()
  local f = assert(io.popen("echo $$", "r"))
  local pid = tonumber(f:read("*l"))
  f:close()
  return pid
end

describe("process facts", function()
  local child, before_ns

  setup(function()
    before_ns = uptime_ns()
    child = start_sleep()
  end)

  teardown(function()
    stop(child)
  end)

  it("lists our own process and a child we started", function()
    local pids, n = list_pids()
    assert.is_true(n >= 2)
    assert.is_true(pids[ffi.C.getpid()])
    assert.is_true(pids[child.pid])
  end)

  it("stops at max: a full result means there may be more", function()
    local pids = ffi.new("int32_t[1]")
    assert.equal(1, rt.call(lib.mr_proc_list, pids, 1))
    assert.is_true(pids[0] > 0)
    assert.equal(0, rt.call(lib.mr_proc_list, nil, 0))
    refused("Invalid argument", rt.call(lib.mr_proc_list, nil, 4))
  end)

  it("reads cmdline with spaces and comm without its newline", function()
    assert.same({ 8, "sleep 30" }, { read(child.pid, "cmdline") })
    assert.same({ 5, "sleep" }, { read(child.pid, "comm") })
  end)

  it("reads stat, status, cgroup and environ whole", function()
    local n, stat = read(child.pid, "stat")
    assert.equal(#stat, n)
    assert.truthy(stat:match("^" .. child.pid .. " %(sleep%) "))
    local _, status = read(child.pid, "status")
    assert.truthy(status:match("Name:%s+sleep\n"))
    assert.truthy(status:match("\nPid:%s+" .. child.pid .. "\n"))
    local _, cgroup = read(child.pid, "cgroup")
    assert.equal(read_file("/proc/" .. child.pid .. "/cgroup"), cgroup)
    local self = ffi.C.getpid()
    local expected_env = read_file("/proc/" .. self .. "/environ")
    local len = #expected_env + 1
    local buf = ffi.new("char[?]", len)
    assert.equal(#expected_env, rt.call(lib.mr_proc_read, self, "environ", buf, len))
    assert.equal(expected_env, ffi.string(buf, #expected_env))
  end)

  it("truncates to the buffer", function()
    assert.same({ 3, "sle" }, { read(child.pid, "cmdline", 4) })
    assert.same({ 0, "" }, { read(child.pid, "comm", 1) })
    assert.same({ 4, "/usr" }, { link(child.pid, "exe", 5) })
  end)

  it("gives the exe and cwd links", function()
    assert.same({ 14, "/usr/bin/sleep" }, { link(child.pid, "exe") })
    local cwd = capture("pwd"):gsub("\n$", "")
    assert.same({ #cwd, cwd }, { link(ffi.C.getpid(), "cwd") })
  end)

  it("refuses file names outside the documented set and bad pids", function()
    for _, name in ipairs({ "maps", "../../etc/passwd", "comm/", "", "exe" }) do
      refused("Invalid argument", read(child.pid, name))
    end
    refused("/" .. child.pid .. "/(null): Invalid argument", read(child.pid, nil))
    refused("Invalid argument", link(child.pid, "root"))
    refused("Invalid argument", link(child.pid, "cmdline"))
    refused("Invalid argument", read(0, "comm"))
    refused("Invalid argument", read(-1, "comm"))
    refused("Invalid argument", rt.call(lib.mr_proc_read, child.pid, "comm", nil, 16))
    refused("Invalid argument", has_symbols(0))
    assert.equal(0ULL, lib.mr_proc_start_ns(-5))
  end)

  it("gives the start time since boot", function()
    local start = tonumber(lib.mr_proc_start_ns(child.pid))
    local tick = 1e9 / tonumber(capture("getconf CLK_TCK"))
    assert.is_true(start >= before_ns - 2 * tick)
    assert.is_true(start <= uptime_ns() + 2 * tick)
    local own = tonumber(lib.mr_proc_start_ns(ffi.C.getpid()))
    assert.is_true(own > 0 and own <= start)
  end)

  it("says whether the executable has symbols", function()
    assert.equal(1, has_symbols(child.pid))
  end)

  it("says a process is gone", function()
    local pid = dead_pid()
    refused("/" .. pid .. "/cmdline: No such file or directory", read(pid, "cmdline"))
    refused("/" .. pid .. "/exe: No such file or directory", link(pid, "exe"))
    refused("/" .. pid .. "/exe: No such file or directory", has_symbols(pid))
    assert.equal(0ULL, lib.mr_proc_start_ns(pid))
  end)
end)

describe("a mapped proc root", function()
  local dir, hz

  -- A static program without any symbol table: strip leaves no .symtab and
  -- a static link has no .dynsym.
  local function build_symbolless(path)
    write_file(path .. ".c", "void _start(void) { for (;;) ; }\n")
    sh("cc -nostdlib -static -o " .. path .. " " .. path .. ".c")
    sh("strip --strip-all " .. path)
    local sections = capture("readelf -S -W " .. path)
    assert.truthy(sections:match("%.text"))
    assert.falsy(sections:match("%.symtab") or sections:match("%.dynsym"))
  end

  setup(function()
    hz = tonumber(capture("getconf CLK_TCK"))
    dir = os.tmpname()
    os.remove(dir)
    sh("mkdir -m 700 " .. dir .. " " .. dir .. "/1 " .. dir .. "/42 " .. dir .. "/sys")
    write_file(dir .. "/7", "a file, not a process\n")
    write_file(dir .. "/1/cmdline", "/sbin/init\0splash\0")
    write_file(dir .. "/1/comm", "init\n")
    write_file(dir .. "/42/cmdline", "nginx\0-g\0daemon off;\0")
    write_file(dir .. "/42/comm", "nginx\n")
    write_file(dir .. "/42/stat", "42 (a) b) (c)) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 "
      .. (12345 * hz) .. " 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n")
    build_symbolless(dir .. "/bare")
    write_file(dir .. "/notelf", "#!/bin/sh\n")
    sh("ln -s /usr/bin/sleep " .. dir .. "/1/exe")
    sh("ln -s " .. dir .. "/bare " .. dir .. "/42/exe")
    sh("mkdir " .. dir .. "/5 && ln -s " .. dir .. "/notelf " .. dir .. "/5/exe")
  end)

  teardown(function()
    proc_mapping.restore()
    if dir then sh("rm -rf " .. dir) end
  end)

  before_each(function()
    proc_mapping.set(dir)
  end)

  after_each(function()
    proc_mapping.restore()
  end)

  it("lists only its numeric directories", function()
    local pids, n = list_pids()
    assert.equal(3, n)
    assert.same({ [1] = true, [5] = true, [42] = true }, pids)
  end)

  it("reads the files of the mapped tree", function()
    assert.same({ 17, "/sbin/init splash" }, { read(1, "cmdline") })
    assert.same({ 4, "init" }, { read(1, "comm") })
    assert.same({ 20, "nginx -g daemon off;" }, { read(42, "cmdline") })
    assert.same({ 5, "nginx" }, { read(42, "comm") })
    refused("/5/comm: No such file or directory", read(5, "comm"))
  end)

  it("parses starttime past the last parenthesis", function()
    assert.equal(12345 * 1000000000ULL, lib.mr_proc_start_ns(42))
    assert.equal(0ULL, lib.mr_proc_start_ns(1))
  end)

  it("checks the symbols of the mapped executables", function()
    assert.equal(1, has_symbols(1))
    assert.equal(0, has_symbols(42))
    refused("/5/exe: Exec format error", has_symbols(5))
    refused("/99/exe: No such file or directory", has_symbols(99))
  end)

  it("falls back to /proc when the variable is empty", function()
    proc_mapping.set("")
    local pids = list_pids()
    assert.is_true(pids[ffi.C.getpid()])
    local comm = read_file("/proc/" .. ffi.C.getpid() .. "/comm"):gsub("\n$", "")
    assert.same({ #comm, comm }, { read(ffi.C.getpid(), "comm") })
  end)
end)
