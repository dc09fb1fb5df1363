-- readme_spec.lua - the commands the README shows work as written: the
-- pipeline that sorts folded stacks by their count, on stacks whose names
-- hold spaces (Rust and C++ names do), run by the shell.
local files = require("support.files")
local shell = require("support.shell")

local README = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/README.md"

-- The README's pipeline after `profile ... -o -`, without a comment.
local function sort_pipeline()
  for line in assert(io.open(README)):lines() do
    local pipeline = line:match("^build/moonrover profile [^|]*%-o %- (|[^#]*)")
    if pipeline then
      return (pipeline:gsub("%s+$", ""))
    end
  end
end

describe("the README's one-minute tour", function()
  it("sorts folded stacks by their count, also when names hold spaces", function()
    local pipeline = assert(sort_pipeline(), "no `-o - | ...` line in the README")
    local input = os.tmpname()
    files.write(input, table.concat({
      "app;main;<core::fmt::Arguments as core::fmt::Display>::fmt 30",
      "app;main;hot 100",
      "app;main;std::vector<int, std::allocator<int>>::push_back 7",
      "",
    }, "\n"))
    local out = shell.capture("cat " .. input .. " " .. pipeline)
    os.remove(input)
    assert.same("app;main;std::vector<int, std::allocator<int>>::push_back 7\n" ..
      "app;main;<core::fmt::Arguments as core::fmt::Display>::fmt 30\n" ..
      "app;main;hot 100\n", out)
  end)
end)
