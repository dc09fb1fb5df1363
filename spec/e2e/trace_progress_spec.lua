-- End-to-end specs for what `moonrover trace` tells the person running it:
-- on a terminal (a pseudo-terminal, spec/support/pty_run.py) a status line
-- of its running totals rewritten about once a second, erased before the
-- summary and while trace's own lines go to the same terminal (-o -); none
-- when standard error is a file; and, either way, one
-- warning line as soon as records are lost (forced with the smallest
-- --queue-bytes under wrk).
local e2e = require("support.e2e")
local te = require("support.trace_e2e")

local it = require("support.skip").guard(it, pending, te.skip_reason())

local PTY_RUN = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/pty_run.py"
local ERASE = "\r\27[K"

describe("moonrover trace's progress (end to end)", function()
  local scene = te.each_test(before_each, after_each, { page = "hello\n" })

  -- Runs `trace -p nginx -d 3` (standard error as redirect says, output to
  -- the file out or as output says) while curl asks nginx every 100 ms;
  -- returns what the trace wrote on standard output and error.
  local function trace_while_asked(redirect, output)
    local client = te.blocked(scene.dir, "client", "sh -c " .. e2e.quote("while :; do /usr/bin/curl -s -o /dev/null " ..
      "http://127.0.0.1:" .. scene.port .. "/index.html; sleep 0.1; done"))
    client.release()
    local words = { e2e.quote(e2e.bin), "trace", "-p", tostring(scene.nginx), "-d", "3", "-o",
      e2e.quote(output or scene.dir .. "/out") }
    local code, stdout, stderr = e2e.run(redirect(table.concat(words, " ")))
    e2e.kill(client.pid)
    client.wait()
    assert.equal(0, code, stdout .. stderr)
    return stdout .. stderr
  end

  it("shows a status line about once a second on a terminal, erased before the summary", function()
    local seen = trace_while_asked(function(cmd)
      return "/usr/bin/python3 " .. e2e.quote(PTY_RUN) .. " /bin/sh -c " .. e2e.quote(cmd)
    end)
    local lines = {}
    for text in seen:gmatch("\r\27%[K(%d+s  lost [^\r\n]*)") do
      lines[#lines + 1] = text
    end
    assert.is_true(#lines >= 2, seen)
    local last_second = 0
    for _, text in ipairs(lines) do
      local second = tonumber(text:match("^(%d+)s  lost %d+  %d+ printed  %d+ conns$"))
      assert.is_true(second ~= nil and second > last_second, text)
      last_second = second
    end
    local last = seen:match(".*(" .. ERASE:gsub("%[", "%%[") .. ".-)$")
    assert.matches("^\r\27%[Kmoonrover trace: %d+%.%d s\r?\n", last)
  end)

  it("erases the status line while its own lines go to the same terminal, and shows it again after", function()
    local seen = trace_while_asked(function(cmd)
      return "/usr/bin/python3 " .. e2e.quote(PTY_RUN) .. " /bin/sh -c " .. e2e.quote(cmd)
    end, "-")
    local lines, glued = 0, {}
    for before in seen:gmatch("(.?.?.?)%d%d:%d%d:%d%d%.%d%d%d +%d+ nginx ") do
      lines = lines + 1
      if before:sub(-1) ~= "\n" and before ~= ERASE:sub(2) then
        glued[#glued + 1] = before
      end
    end
    assert.is_true(lines > 0, seen)
    assert.same({}, glued, seen)
    assert.is_truthy(seen:find("\n\r\27%[K%d+s  lost "), seen)
  end)

  it("shows no status line when standard error is a file", function()
    local seen = trace_while_asked(function(cmd)
      return cmd .. " 2>" .. e2e.quote(scene.dir .. "/err") .. "; cat " .. e2e.quote(scene.dir .. "/err") .. " >&2"
    end)
    assert.is_nil(seen:find("\27", 1, true), seen)
    assert.is_nil(seen:find(" printed ", 1, true), seen)
    assert.matches("\nmoonrover trace: %d+%.%d s\n", seen)
  end)

  it("warns at once, on a line of its own, when records start being lost", function()
    local wrk = te.blocked(scene.dir, "wrk", "/usr/bin/wrk -t1 -c4 -d30 http://127.0.0.1:" .. scene.port ..
      "/index.html")
    wrk.release()
    local code, _, err = e2e.run(e2e.quote(e2e.bin) .. " trace -o /dev/null --queue-bytes 65536 -p " .. scene.nginx ..
      "," .. wrk.pid .. " -d 3")
    e2e.kill(wrk.pid)
    wrk.wait()
    assert.equal(0, code, err)
    local lost = tonumber(err:match("queue full %(data%): (%d+)"))
    assert.is_truthy(lost, "no loss forced:\n" .. err)
    local warnings = {}
    for line in err:gmatch("[^\n]+") do
      if line:find("losing records", 1, true) then
        warnings[#warnings + 1] = line
      end
    end
    assert.equal(1, #warnings, err)
    assert.matches("^moonrover trace: losing records %(%d+ so far: [^)]*queue full%); the summary counts them all",
      warnings[1])
    assert.is_true(err:find("losing records", 1, true) < err:find("\nmoonrover trace: %d"), err)
  end)
end)
