-- pid_file_spec.lua - the agent's pid file (runtime/files/pid_file.c): created
-- new and locked, held against a second taker who is told who holds it,
-- recognised only in the process that holds its lock, removed only by its
-- holder, and never written through a link or in a directory others can write.
local rt = require("moonrover.rt").with_test_api()
local e2e = require("support.e2e")
local files = require("support.files")
local shell = require("support.shell")
local skip = require("support.skip")

local ffi, lib = rt.ffi, rt.lib
ffi.cdef("int getpid(void);")

-- Cases that give a directory or a link to another user.
local as_root = skip.guard(it, pending, not e2e.is_root() and "needs root (chown)" or nil)

local function acquire(path)
  local pf, err = rt.call(lib.mr_pid_file_acquire, path)
  return pf and ffi.gc(pf, lib.mr_pid_file_release), err
end

local function release(pf)
  lib.mr_pid_file_release(ffi.gc(pf, nil))
end

local function uid_of(user)
  return (shell.capture("id -u " .. user):gsub("%s+$", ""))
end

-- A process that locks path the way an agent does (flock, exclusive) after
-- writing pid_text into it (its own pid when pid_text is ""); the script
-- writes its pid into a ready file once the lock is held.
local LOCKER = [[
import fcntl, os, sys, time
path, text, ready = sys.argv[1], sys.argv[2], sys.argv[3]
f = open(path, "w")
fcntl.flock(f, fcntl.LOCK_EX)
f.write(text or "%d\n" % os.getpid())
f.flush()
with open(ready + ".part", "w") as r:
    r.write(str(os.getpid()))
os.rename(ready + ".part", ready)
time.sleep(60)
]]

local function locker(dir, path, pid_text)
  local ready = dir .. "/locker.ready"
  files.write(dir .. "/locker.py", LOCKER)
  shell.must(string.format("/usr/bin/python3 %s %s %s %s &", e2e.quote(dir .. "/locker.py"), e2e.quote(path),
    e2e.quote(pid_text), e2e.quote(ready)))
  for _ = 1, 1000 do
    local pid = tonumber(files.read(ready) or "")
    if pid then
      return pid
    end
    lib.mr_sys_sleep_ms(10)
  end
  error("the locking process did not start")
end

describe("pid file", function()
  local dir, started

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-pidfile.XXXXXX"):gsub("%s+$", "")
    started = {}
  end)

  after_each(function()
    for _, pid in ipairs(started) do
      os.execute("kill " .. pid .. " 2>/dev/null")
    end
    shell.must("rm -rf " .. dir)
  end)

  local function start_locker(path, pid_text)
    local pid = locker(dir, path, pid_text or "")
    started[#started + 1] = pid
    return pid
  end

  it("holds the file with this process's pid until released, then removes it", function()
    local path = dir .. "/agent.pid"
    local pf = assert(acquire(path))
    assert.equal(ffi.C.getpid() .. "\n", files.read(path))
    assert.equal(ffi.C.getpid(), rt.call(lib.mr_pid_file_holder, path))
    assert.equal("agent.pid\n", shell.capture("ls -A " .. dir))
    release(pf)
    assert.is_nil(files.read(path))
    assert.same({ nil, "cannot read " .. path .. ": No such file or directory (is the agent running?)" },
      { rt.call(lib.mr_pid_file_holder, path) })
  end)

  it("refuses a second taker, naming the holder, and stays held", function()
    local path = dir .. "/agent.pid"
    local holder = start_locker(path)
    assert.same({ nil, "cannot use the pid file " .. path .. ": another agent (pid " .. holder .. ") holds it; " ..
      "stop that one first, or give this one another pid file" }, { acquire(path) })
    assert.equal(holder .. "\n", files.read(path))
    assert.equal(holder, rt.call(lib.mr_pid_file_holder, path))
    assert.equal("agent.pid\nlocker.py\nlocker.ready\n", shell.capture("ls -A " .. dir))
  end)

  it("refuses a second taker in the same process too", function()
    local path = dir .. "/agent.pid"
    local first = assert(acquire(path))
    local second, err = acquire(path)
    assert.is_nil(second)
    assert.matches("another agent %(pid " .. ffi.C.getpid() .. "%) holds it", err)
    release(first)
  end)

  it("replaces a stale file: one naming an exited process, or a live one that does not hold it", function()
    local path = dir .. "/agent.pid"
    files.write(path, "4000000\n")
    assert.same({ nil, "no agent holds " .. path .. ": process 4000000, which it names, has exited" },
      { rt.call(lib.mr_pid_file_holder, path) })
    local pf = assert(acquire(path))
    assert.equal(ffi.C.getpid() .. "\n", files.read(path))
    release(pf)
    files.write(path, "1\n")
    assert.same({ nil, "process 1, which " .. path .. " names, does not hold that pid file: it is not the agent " ..
      "that wrote it (another command, or a reused pid)" }, { rt.call(lib.mr_pid_file_holder, path) })
    pf = assert(acquire(path))
    assert.equal(ffi.C.getpid(), rt.call(lib.mr_pid_file_holder, path))
    release(pf)
  end)

  it("does not take a file locked by a process other than the one it names", function()
    local path = dir .. "/agent.pid"
    start_locker(path, "1\n")
    assert.same({ nil, "cannot use the pid file " .. path .. ": it is locked by a process other than the one " ..
      "it names" }, { acquire(path) })
    assert.equal("1\n", files.read(path))
  end)

  it("leaves a file that replaced its own in place when released", function()
    local path = dir .. "/agent.pid"
    local pf = assert(acquire(path))
    files.write(dir .. "/other", "other\n")
    shell.must("mv " .. dir .. "/other " .. path)
    release(pf)
    assert.equal("other\n", files.read(path))
  end)

  it("refuses a path that is a symbolic link, touching neither the link nor its target", function()
    files.write(dir .. "/victim", "precious\n")
    shell.must("ln -s " .. dir .. "/victim " .. dir .. "/agent.pid")
    local why = "it is a symbolic link (not followed)"
    assert.same({ nil, "cannot use the pid file " .. dir .. "/agent.pid: " .. why }, { acquire(dir .. "/agent.pid") })
    assert.same({ nil, "cannot use the pid file " .. dir .. "/agent.pid: " .. why },
      { rt.call(lib.mr_pid_file_holder, dir .. "/agent.pid") })
    assert.equal("precious\n", files.read(dir .. "/victim"))
    assert.equal(dir .. "/victim\n", shell.capture("readlink " .. dir .. "/agent.pid"))
    assert.equal("agent.pid\nvictim\n", shell.capture("ls -A " .. dir))
  end)

  it("refuses a directory that other users can write, unless sticky and root's or ours", function()
    shell.must("mkdir -m 777 " .. dir .. "/open && mkdir -m 775 " .. dir .. "/group && mkdir -m 1777 " .. dir ..
      "/sticky")
    for _, case in ipairs({ { "open", "777" }, { "group", "775" } }) do
      local path = dir .. "/" .. case[1] .. "/agent.pid"
      assert.same({ nil, "cannot use the pid file " .. path .. ": its directory " .. dir .. "/" .. case[1] ..
        " can be written by other users (mode " .. case[2] .. ", owner uid " .. uid_of("") .. "), who could " ..
        "replace it; use a directory only root or this user can write" }, { acquire(path) })
      assert.equal("", shell.capture("ls -A " .. dir .. "/" .. case[1]))
    end
    release(assert(acquire(dir .. "/sticky/agent.pid")))
  end)

  as_root("refuses a sticky directory of another user, and a link of another user on the way", function()
    shell.must("mkdir -m 1777 " .. dir .. "/theirs && chown nobody " .. dir .. "/theirs")
    local path = dir .. "/theirs/agent.pid"
    assert.same({ nil, "cannot use the pid file " .. path .. ": its directory " .. dir .. "/theirs can be " ..
      "written by other users (mode 1777, owner uid " .. uid_of("nobody") .. "), who could replace it; use a " ..
      "directory only root or this user can write" }, { acquire(path) })
    shell.must("mkdir -m 1777 " .. dir .. "/tmp && mkdir " .. dir .. "/run")
    shell.must("ln -s " .. dir .. "/run " .. dir .. "/tmp/evil && chown -h nobody " .. dir .. "/tmp/evil")
    local pf, err = acquire(dir .. "/tmp/evil/agent.pid")
    assert.is_nil(pf)
    assert.equal("cannot use the pid file " .. dir .. "/tmp/evil/agent.pid: " .. dir .. "/tmp/evil is a " ..
      "symbolic link of uid " .. uid_of("nobody") .. " in a sticky, world-writable directory (not followed: " ..
      "another user may have planted it)", err)
    assert.equal("", shell.capture("ls -A " .. dir .. "/run"))
  end)

  it("says when the file holds no process id", function()
    local path = dir .. "/agent.pid"
    for _, text in ipairs({ "", "abc\n", "12 13\n", "-5\n", "0\n" }) do
      files.write(path, text)
      assert.same({ nil, "cannot use the pid file " .. path .. ": it does not hold a process id" },
        { rt.call(lib.mr_pid_file_holder, path) }, text)
    end
  end)
end)
