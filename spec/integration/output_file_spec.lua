-- output_file_spec.lua - output files (runtime/files/output_file.c through
-- moonrover.output_file): the target changes only when a write is complete,
-- a link is never followed nor replaced, a FIFO or device is written in
-- place, a failed write says where, and nothing is left behind.
local e2e = require("support.e2e")
local errno = require("support.errno")
local files = require("support.files")
local output_file = require("moonrover.output_file")
local rt = require("moonrover.rt").with_test_api()
local ffi_errno = rt.ffi.errno
local shell = require("support.shell")
local skip = require("support.skip")
local tmpfs = require("support.tmpfs")

-- Cases that give a file to another user, make a device node or mount a
-- small file system.
local as_root = skip.guard(it, pending, not e2e.is_root() and "needs root (chown, mknod, mount)" or nil)

local LINK_REFUSED = "it is a symbolic link, and outputs are never written through a link nor put in its place " ..
  "(name the file itself, or - for standard output)"

local function listing(dir)
  return shell.capture("ls -A " .. dir)
end

describe("output files", function()
  local dir

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-output.XXXXXX"):gsub("%s+$", "")
  end)

  after_each(function()
    rt.lib.mr_test_output_fallback(rt.lib.MR_TEST_OUTPUT_NORMAL)
    shell.must("rm -rf " .. dir)
  end)

  it("writes under a temporary name where unnamed files are not supported", function()
    rt.lib.mr_test_output_fallback(rt.lib.MR_TEST_OUTPUT_NAMED)
    files.write(dir .. "/out.txt", "old")
    local out = assert(output_file.open(dir .. "/out.txt"))
    out:write("new text")
    assert.equal("old", files.read(dir .. "/out.txt"))
    assert.matches("^out%.txt\nout%.txt%.%w%w%w%w%w%w\n$", listing(dir))
    assert.is_true(out:commit())
    assert.equal("new text", files.read(dir .. "/out.txt"))
    assert.equal("out.txt\n", listing(dir))
  end)

  it("removes the temporary name when aborted", function()
    rt.lib.mr_test_output_fallback(rt.lib.MR_TEST_OUTPUT_NAMED)
    local out = assert(output_file.open(dir .. "/out.txt"))
    out:write("half")
    out:abort()
    assert.equal("", listing(dir))
  end)

  it("copies an unnamed file that cannot be linked (no /proc) into place, old target or none", function()
    rt.lib.mr_test_output_fallback(rt.lib.MR_TEST_OUTPUT_COPY)
    local big = string.rep("0123456789abcdef", 64 * 1024)
    local out = assert(output_file.open(dir .. "/new.txt"))
    out:write(big)
    assert.is_true(out:commit())
    files.write(dir .. "/out.txt", "old")
    out = assert(output_file.open(dir .. "/out.txt"))
    out:write("new text")
    assert.equal("old", files.read(dir .. "/out.txt"))
    assert.is_true(out:commit())
    assert.is_true(files.read(dir .. "/new.txt") == big, "the copied file differs from what was written")
    assert.equal("new text", files.read(dir .. "/out.txt"))
    assert.equal("new.txt\nout.txt\n", listing(dir))
    assert.equal("-rw-r--r--", shell.capture("stat -c %A " .. dir .. "/out.txt"):gsub("%s+$", ""))
  end)

  it("replaces the target only at commit, and leaves no temporary file", function()
    files.write(dir .. "/out.txt", "old")
    local out = assert(output_file.open(dir .. "/out.txt"))
    out:write("new "):write("text")
    assert.equal("old", files.read(dir .. "/out.txt"))
    assert.is_true(out:commit())
    assert.equal("new text", files.read(dir .. "/out.txt"))
    assert.equal("out.txt\n", listing(dir))
  end)

  it("leaves the target as it was when aborted", function()
    files.write(dir .. "/out.txt", "old")
    local out = assert(output_file.open(dir .. "/out.txt"))
    out:write("half")
    out:abort()
    assert.equal("old", files.read(dir .. "/out.txt"))
    assert.equal("out.txt\n", listing(dir))
  end)

  it("refuses a target that is a symbolic link, leaving the link and what it points to as they were", function()
    files.write(dir .. "/victim", "precious")
    shell.must("ln -s " .. dir .. "/victim " .. dir .. "/out.txt")
    local out, err = output_file.open(dir .. "/out.txt")
    assert.is_nil(out)
    assert.equal("cannot write " .. dir .. "/out.txt: " .. LINK_REFUSED, err)
    assert.equal("precious", files.read(dir .. "/victim"))
    assert.equal(dir .. "/victim\n", shell.capture("readlink " .. dir .. "/out.txt"))
    assert.equal("out.txt\nvictim\n", listing(dir))
  end)

  as_root("does not follow another user's link in a sticky world-writable directory on the way", function()
    shell.must("mkdir -m 1777 " .. dir .. "/tmp && mkdir -m 755 " .. dir .. "/etc")
    files.write(dir .. "/etc/passwd", "precious")
    shell.must("ln -s " .. dir .. "/etc " .. dir .. "/tmp/evil && chown -h nobody " .. dir .. "/tmp/evil")
    local out, err = output_file.open(dir .. "/tmp/evil/passwd")
    assert.is_nil(out)
    assert.equal("cannot write " .. dir .. "/tmp/evil/passwd: " .. dir .. "/tmp/evil is a symbolic link of uid " ..
      shell.capture("id -u nobody"):gsub("%s+$", "") .. " in a sticky, world-writable directory " ..
      "(not followed: another user may have planted it)", err)
    assert.equal("precious", files.read(dir .. "/etc/passwd"))
    assert.equal("passwd\n", listing(dir .. "/etc"))
  end)

  it("follows a link of its own, and links outside sticky world-writable directories", function()
    shell.must("mkdir -m 1777 " .. dir .. "/tmp && mkdir " .. dir .. "/real")
    shell.must("ln -s " .. dir .. "/real " .. dir .. "/tmp/mine && ln -s real " .. dir .. "/plain")
    for _, path in ipairs({ dir .. "/tmp/mine/a.txt", dir .. "/plain/b.txt", dir .. "/plain/../real/c.txt" }) do
      local out = assert(output_file.open(path))
      out:write(path)
      assert.is_true(out:commit())
      assert.equal(path, files.read(path))
    end
    assert.equal("a.txt\nb.txt\nc.txt\n", listing(dir .. "/real"))
  end)

  it("writes into a FIFO in place instead of replacing it", function()
    shell.must("mkfifo " .. dir .. "/fifo")
    shell.must("(timeout 20 cat " .. dir .. "/fifo > " .. dir .. "/got.part && mv " .. dir .. "/got.part " .. dir ..
      "/got) &")
    local out = assert(output_file.open(dir .. "/fifo"))
    out:write("through the pipe")
    assert.is_true(out:commit())
    for _ = 1, 2000 do
      if files.read(dir .. "/got") then
        break
      end
      rt.lib.mr_sys_sleep_ms(10)
    end
    assert.equal("through the pipe", files.read(dir .. "/got"))
    assert.equal("p", shell.capture("stat -c %A " .. dir .. "/fifo"):sub(1, 1))
  end)

  as_root("writes into a character device in place (a private /dev/null) instead of replacing it", function()
    shell.must("mknod -m 666 " .. dir .. "/null c 1 3")
    local out = assert(output_file.open(dir .. "/null"))
    out:write("discarded")
    assert.is_true(out:commit())
    assert.equal("c", shell.capture("stat -c %A " .. dir .. "/null"):sub(1, 1))
    assert.equal("null\n", listing(dir))
  end)

  it("refuses a directory, and a path that names one", function()
    shell.must("mkdir " .. dir .. "/sub")
    assert.same({ nil, "cannot write " .. dir .. "/sub: Is a directory" }, { output_file.open(dir .. "/sub") })
    assert.same({ nil, "cannot write " .. dir .. "/sub/: Is a directory" }, { output_file.open(dir .. "/sub/") })
  end)

  as_root("names the path and the temporary file's directory when a write fails, and leaves nothing", function()
    local small = dir .. "/small"
    tmpfs.mount(small, "64k", pending, finally)
    local out = assert(output_file.open(small .. "/out.txt"))
    out:write(string.rep("x", 1024 * 1024))
    local ok, err = out:commit()
    local listed = listing(small)
    assert.same({ nil, "cannot write " .. small .. "/out.txt: No space left on device (written first to an " ..
      "unnamed temporary file in " .. small .. ")" }, { ok, err })
    assert.equal("", listed)
  end)

  it("sets errno to the failure's code when it cannot open, after its cleanup", function()
    ffi_errno(0)
    assert.is_nil((output_file.open(dir .. "/missing/out.txt")))
    assert.equal(errno.ENOENT, ffi_errno())
    shell.must("mkdir " .. dir .. "/sub")
    ffi_errno(0)
    assert.is_nil((output_file.open(dir .. "/sub")))
    assert.equal(errno.EISDIR, ffi_errno())
  end)

  it("says why when the directory cannot be written, and when it is finished twice", function()
    local out, err = output_file.open(dir .. "/missing/out.txt")
    assert.is_nil(out)
    assert.equal("cannot write " .. dir .. "/missing/out.txt: " .. dir .. "/missing: No such file or directory", err)
    out = assert(output_file.open(dir .. "/out.txt"))
    assert.is_true(out:commit())
    assert.same({ nil, "cannot write " .. dir .. "/out.txt: already finished" }, { out:commit() })
  end)
end)
