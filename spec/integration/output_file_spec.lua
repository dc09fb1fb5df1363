-- output_file_spec.lua - output files (runtime/base/output_file.c through
-- moonrover.output_file): the target changes only when a write is complete,
-- a planted link is replaced, never followed, and nothing is left behind.
local files = require("support.files")
local output_file = require("moonrover.output_file")
local shell = require("support.shell")

local function listing(dir)
  return shell.capture("ls -A " .. dir)
end

describe("output files", function()
  local dir

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-output.XXXXXX"):gsub("%s+$", "")
  end)

  after_each(function()
    shell.must("rm -rf " .. dir)
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

  it("replaces a planted link instead of writing through it", function()
    files.write(dir .. "/victim", "precious")
    shell.must("ln -s " .. dir .. "/victim " .. dir .. "/out.txt")
    local out = assert(output_file.open(dir .. "/out.txt"))
    out:write("profile")
    assert.is_true(out:commit())
    assert.equal("precious", files.read(dir .. "/victim"))
    assert.equal("profile", files.read(dir .. "/out.txt"))
    assert.equal("", shell.capture("find " .. dir .. " -type l"))
  end)

  it("says why when the directory cannot be written, and when it is finished twice", function()
    local out, err = output_file.open(dir .. "/missing/out.txt")
    assert.is_nil(out)
    assert.equal("cannot write " .. dir .. "/missing/out.txt: No such file or directory", err)
    out = assert(output_file.open(dir .. "/out.txt"))
    assert.is_true(out:commit())
    assert.same({ nil, "cannot write " .. dir .. "/out.txt: already finished" }, { out:commit() })
  end)
end)
