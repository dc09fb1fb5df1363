-- The live status line: rewritten in place on a terminal, silent elsewhere.
local status_line = require("moonrover.lib.status_line")

local function recorder(tty)
  local out = {}
  local line = status_line.new({ tty = tty, write = function(text) out[#out + 1] = text end })
  return line, out
end

describe("lib.status_line", function()
  it("rewrites one line in place on a terminal", function()
    local line, out = recorder(true)
    line:update("1/10 s")
    line:update("2/10 s")
    line:clear()
    assert.are.same({ "\r\27[K1/10 s", "\r\27[K2/10 s", "\r\27[K" }, out)
  end)

  it("shows nothing when the output is not a terminal, but still warns", function()
    local line, out = recorder(false)
    line:update("1/10 s")
    line:clear()
    line:warn("losing records")
    assert.are.same({ "losing records\n" }, out)
  end)

  it("prints a warning above the status line and shows the status again", function()
    local line, out = recorder(true)
    line:update("3/10 s")
    line:warn("losing records")
    assert.are.same("\r\27[Klosing records\n3/10 s", out[2])
  end)

  it("never wraps: a long status is cut to 79 columns", function()
    local line, out = recorder(true)
    line:update(string.rep("x", 200))
    assert.are.equal(79 + #"\r\27[K", #out[1])
  end)

  it("is erased while other output is written to the terminal, and shown again after", function()
    local line, out = recorder(true)
    local function write_lines()
      out[#out + 1] = "line\n"
    end
    line:around(write_lines)
    line:update("1/10 s")
    line:around(write_lines)
    assert.are.same({ "line\n", "\r\27[K1/10 s", "\r\27[K", "line\n", "\r\27[K1/10 s" }, out)
  end)
end)
