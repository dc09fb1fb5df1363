-- folded_spec.lua - folded-stack writer and parser.
local folded = require("moonrover.profiler.writers.folded")

local function sample_stacks()
  return {
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_a" },
      kinds = { "user", "user", "kernel" }, count = 30, nanos = 303 },
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_b" }, count = 10, nanos = 101 },
    { comm = "myapp", pid = 43, frames = { "main", "jitted" },
      kinds = { "user", "jit" }, count = 5, nanos = 55 },
  }
end

describe("folded writer", function()
  it("renders one sorted line per stack with kernel and jit suffixes", function()
    assert.are.equal(
      "myapp;main;jitted_[j] 5\n" ..
      "myapp;main;work;hot_a_[k] 30\n" ..
      "myapp;main;work;hot_b 10\n",
      folded.render(sample_stacks(), { unit = "samples" }))
  end)

  it("puts a per-thread stack's thread between the process and the root", function()
    local stacks = {
      { comm = "app", pid = 7, tid = 8, thread = "worker 1", frames = { "main", "spin" },
        kinds = { "user", "kernel" }, count = 3 },
      { comm = "app", pid = 7, tid = 9, thread = "", frames = { "main" }, count = 2 },
      { comm = "app", pid = 7, frames = { "main" }, count = 1 },
    }
    assert.are.equal("app;main 1\n" .. "app;tid-8 (worker 1);main;spin_[k] 3\n" .. "app;tid-9;main 2\n",
      folded.render(stacks, { unit = "samples" }))
  end)

  it("uses nanoseconds for off-CPU profiles", function()
    assert.are.equal(
      "myapp;main;jitted_[j] 55\n" ..
      "myapp;main;work;hot_a_[k] 303\n" ..
      "myapp;main;work;hot_b 101\n",
      folded.render(sample_stacks(), { unit = "nanoseconds", off_cpu = true }))
  end)

  it("merges identical stacks of different processes by summing", function()
    local stacks = {
      { comm = "a", pid = 1, frames = { "x", "y" }, count = 2 },
      { comm = "a", pid = 2, frames = { "x", "y" }, count = 3 },
      { comm = "a", pid = 1, frames = { "x", "y" }, kinds = { "user", "kernel" }, count = 1 },
    }
    assert.are.equal("a;x;y 5\na;x;y_[k] 1\n", folded.render(stacks, {}))
  end)

  it("sanitises separators, control characters and trailing numbers", function()
    local stacks = {
      { comm = "my app", frames = { "ns;f", "line\nbreak", "tab\there", "leaf 12" }, count = 4 },
      { comm = "my app", frames = { "ns:f", "line break", "tab here", "leaf_12" }, count = 1 },
      { comm = "", frames = { "", "  padded  " }, count = 2 },
    }
    assert.are.equal(
      "[unknown];[unknown];padded 2\n" ..
      "my app;ns:f;line break;tab here;leaf_12 5\n",
      folded.render(stacks, {}))
  end)

  it("skips stacks without a positive value and renders nothing for no samples", function()
    local stacks = { { comm = "a", frames = { "x" }, count = 0 }, { comm = "b", frames = { "y" } } }
    assert.are.equal("", folded.render(stacks, {}))
    assert.are.equal("", folded.render({}, {}))
  end)

  it("writes the rendered text to a file handle", function()
    local written = {}
    local fh = { write = function(_, s) written[#written + 1] = s end }
    folded.write(sample_stacks(), {}, fh)
    assert.are.equal(folded.render(sample_stacks(), {}), table.concat(written))
  end)

  it("writes through a real file", function()
    local path = os.tmpname()
    local fh = assert(io.open(path, "w"))
    folded.write(sample_stacks(), {}, fh)
    fh:close()
    fh = assert(io.open(path, "r"))
    local text = fh:read("*a")
    fh:close()
    os.remove(path)
    assert.are.equal(folded.render(sample_stacks(), {}), text)
  end)
end)

describe("folded parser", function()
  local function by_key(stacks)
    local map = {}
    for _, s in ipairs(stacks) do
      map[s.comm .. ";" .. table.concat(s.frames, ";")] = s
    end
    return map
  end

  it("round-trips render output, kinds included", function()
    local parsed = by_key(folded.parse(folded.render(sample_stacks(), {})))
    local hot_a = parsed["myapp;main;work;hot_a"]
    assert.are.same({ "user", "user", "kernel" }, hot_a.kinds)
    assert.are.equal(30, hot_a.count)
    assert.are.same({ "user", "jit" }, parsed["myapp;main;jitted"].kinds)
    assert.are.equal(10, parsed["myapp;main;work;hot_b"].count)
    local again = folded.render(folded.parse(folded.render(sample_stacks(), {})), {})
    assert.are.equal(folded.render(sample_stacks(), {}), again)
  end)

  it("reads values into nanos for off-CPU profiles", function()
    local stacks = folded.parse("app;a;b 1500\n", { off_cpu = true })
    assert.are.equal(1500, stacks[1].nanos)
    assert.is_nil(stacks[1].count)
  end)

  it("takes the last token as the value and skips lines that are not stacks", function()
    local stacks = folded.parse("# comment\n\napp;f(int x) 7\r\napp;g 12 3\nnovalue\n")
    assert.are.equal(2, #stacks)
    assert.are.same({ "f(int x)" }, stacks[1].frames)
    assert.are.equal(7, stacks[1].count)
    assert.are.same({ "g 12" }, stacks[2].frames)
    assert.are.equal(3, stacks[2].count)
  end)

  it("keeps a process-only stack with no frames", function()
    local stacks = folded.parse("idle 4\n")
    assert.are.equal("idle", stacks[1].comm)
    assert.are.same({}, stacks[1].frames)
  end)
end)
