-- agent_status_spec.lua - the agent's status file (runtime/agent/agent_status.c),
-- which `moonrover reload` waits on: its format, read back whole; a file cut
-- short or with an empty field refused; an answer from before the reload was
-- asked, or from another agent, not taken; removal.
local rt = require("moonrover.rt").with_test_api()
local files = require("support.files")
local shell = require("support.shell")

local ffi, lib = rt.ffi, rt.lib

local function status(fields)
  local st = ffi.new("struct mr_agent_status")
  st.pid, st.began_ns, st.reload, st.result = fields.pid, fields.began_ns, fields.reload, fields.result
  ffi.copy(st.detail, fields.detail)
  return st
end

local function read(pid_file)
  local st = ffi.new("struct mr_agent_status")
  local ok, err = rt.call(lib.mr_agent_status_read, pid_file, st)
  return ok and st, err
end

describe("the agent's status file", function()
  local dir, pid_file

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-status.XXXXXX"):gsub("%s+$", "")
    pid_file = dir .. "/agent.pid"
  end)

  after_each(function()
    shell.must("rm -rf " .. dir)
  end)

  it("is a few lines of text, read back as written", function()
    assert(rt.call(lib.mr_agent_status_write, pid_file, status({ pid = 4242, began_ns = 81234567890, reload = 3,
      result = lib.MR_AGENT_RESULT_REFUSED, detail = "web.lua: line 3: boom" })))
    assert.same("pid 4242\nbegan 81234567890\nreload 3\nresult refused\nweb.lua: line 3: boom\n",
      files.read(pid_file .. ".status"))
    local st = assert(read(pid_file))
    assert.same({ 4242, 81234567890, 3, lib.MR_AGENT_RESULT_REFUSED, "web.lua: line 3: boom" },
      { st.pid, tonumber(st.began_ns), tonumber(st.reload), st.result, ffi.string(st.detail) })
  end)

  it("writes failed for a first start whose script did not start, and reads it back", function()
    assert(rt.call(lib.mr_agent_status_write, pid_file, status({ pid = 7, began_ns = 5, reload = 0,
      result = lib.MR_AGENT_RESULT_FAILED, detail = "a.lua did not start" })))
    assert.matches("\nresult failed\n", files.read(pid_file .. ".status"))
    assert.same(lib.MR_AGENT_RESULT_FAILED, assert(read(pid_file)).result)
  end)

  it("refuses a file cut short, an empty or negative field and an unknown result", function()
    local whole = "pid 4242\nbegan 10\nreload 1\nresult ok\nloaded 2 script(s)\n"
    for _, text in ipairs({ whole:sub(1, -2), whole:sub(1, 20), "pid \nbegan 10\nreload 1\nresult ok\nx\n",
      "pid 4242\nbegan 10\nreload -1\nresult ok\nx\n", "pid 4242\nbegan 10\nreload 1\nresult maybe\nx\n",
      "reload 1\npid 4242\nbegan 10\nresult ok\nx\n" }) do
      files.write(pid_file .. ".status", text)
      local st, err = read(pid_file)
      assert(not st, "took " .. text)
      assert.matches("is not a whole agent's status file", err, 1, true)
    end
    files.write(pid_file .. ".status", whole)
    assert.same("loaded 2 script(s)", ffi.string(assert(read(pid_file)).detail))
  end)

  it("answers a reload only from its agent, and only when it began after the reload was asked", function()
    local st = status({ pid = 4242, began_ns = 1000, reload = 5, result = lib.MR_AGENT_RESULT_OK, detail = "" })
    assert.same(1, lib.mr_agent_status_answers(st, 4242, 1000))
    assert.same(1, lib.mr_agent_status_answers(st, 4242, 999))
    assert.same(0, lib.mr_agent_status_answers(st, 4242, 1001))
    assert.same(0, lib.mr_agent_status_answers(st, 4243, 999))
  end)

  it("is removed, and removing none is no error", function()
    assert(rt.call(lib.mr_agent_status_write, pid_file, status({ pid = 1, began_ns = 0, reload = 0,
      result = lib.MR_AGENT_RESULT_OK, detail = "loaded 0 script(s)" })))
    assert(rt.call(lib.mr_agent_status_remove, pid_file))
    assert.is_nil(files.read(pid_file .. ".status"))
    assert(rt.call(lib.mr_agent_status_remove, pid_file))
    local st, err = read(pid_file)
    assert.is_nil(st)
    assert.matches("agent.pid.status", err, 1, true)
  end)
end)
