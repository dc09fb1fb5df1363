-- output_killed_spec.lua - a `moonrover trace -o` or `profile -o` killed by
-- SIGKILL while it runs leaves no file beside its output: the output is
-- written unnamed (O_TMPFILE) until the end, so nothing half-written has a
-- name, and a file already at the path stays as it was.
local e2e = require("support.e2e")
local files = require("support.files")
local shell = require("support.shell")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local q = e2e.quote

-- Runs cmd in the background; returns its pid.
local function background(cmd)
  return tonumber(shell.capture(cmd .. " >/dev/null 2>&1 & echo $!"))
end

-- Whether pid holds a descriptor of a file in dir (its output, written).
local function holds_file_in(pid, dir)
  for fd in shell.capture("ls /proc/" .. pid .. "/fd"):gmatch("%d+") do
    local target = shell.capture("readlink /proc/" .. pid .. "/fd/" .. fd)
    if target:sub(1, #dir + 1) == dir .. "/" then
      return true
    end
  end
  return false
end

-- Starts moonrover with words (its output in out_dir), waits until it
-- writes its output, kills it with SIGKILL and waits until it is gone.
local function kill_mid_run(words, out_dir)
  local pid = background(q(e2e.bin) .. " " .. words)
  te.wait_for("moonrover to open its output in " .. out_dir, function()
    return holds_file_in(pid, out_dir) or not te.alive(pid)
  end)
  assert(te.alive(pid), "moonrover ended before it was killed: " .. words)
  shell.must("kill -9 " .. pid)
  te.wait_for("moonrover to be gone", function()
    return not te.alive(pid)
  end)
end

describe("an output of a killed run (end to end)", function()
  local dir, out_dir, sleeper

  before_each(function()
    dir = e2e.tmpdir()
    out_dir = dir .. "/out"
    shell.must("mkdir " .. q(out_dir))
    sleeper = background("sleep 300")
  end)

  after_each(function()
    e2e.kill(sleeper)
    e2e.rmdir(dir)
  end)

  it("leaves nothing in the output's directory after `trace -o` is killed", function()
    kill_mid_run("trace --format json -o " .. q(out_dir .. "/out.jsonl") .. " -p " .. sleeper .. " -d 120",
      out_dir)
    assert.equal("", shell.capture("ls -A " .. q(out_dir)))
  end)

  it("leaves the file already there as it was after `profile -o` is killed", function()
    files.write(out_dir .. "/out.folded", "old")
    kill_mid_run("profile -o " .. q(out_dir .. "/out.folded") .. " -p " .. sleeper .. " -d 120", out_dir)
    assert.equal("out.folded\n", shell.capture("ls -A " .. q(out_dir)))
    assert.equal("old", files.read(out_dir .. "/out.folded"))
  end)
end)
