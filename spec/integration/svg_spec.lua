-- svg_spec.lua - SVG flame graph writer: well-formed, proportional, escaped, bounded.
local svg = require("moonrover.profiler.writers.svg")

local function has_xmllint()
  return os.execute("command -v xmllint >/dev/null 2>&1") == 0
end

-- Asserts that text is well-formed XML according to xmllint.
local function assert_well_formed(text)
  assert(has_xmllint(), "xmllint is missing: apt-get install -y libxml2-utils")
  local path = os.tmpname()
  local fh = assert(io.open(path, "w"))
  fh:write(text)
  fh:close()
  local pipe = assert(io.popen("xmllint --noout " .. path .. " 2>&1"))
  local errors = pipe:read("*a")
  pipe:close()
  os.remove(path)
  assert.are.equal("", errors)
end

local function count(text, pattern)
  local n = 0
  for _ in text:gmatch(pattern) do n = n + 1 end
  return n
end

-- The attributes of the frame whose title starts with name followed by " (".
local function frame(text, name)
  local pattern = "<g data%-o=\"(%d+)\" data%-v=\"(%d+)\"><title>" .. name:gsub("%p", "%%%0") ..
                  " %(([^<]*)</title><rect x=\"([%d.]+)\" y=\"(%d+)\" width=\"([%d.]+)\"" ..
                  " height=\"%d+\" fill=\"#(%x%x)(%x%x)(%x%x)\"/><text[^>]*>([^<]*)</text>"
  local o, v, info, x, y, w, r, g, b, label = text:match(pattern)
  if not o then return nil end
  return { o = tonumber(o), v = tonumber(v), info = info, x = tonumber(x), y = tonumber(y),
           w = tonumber(w), r = tonumber(r, 16), g = tonumber(g, 16), b = tonumber(b, 16),
           label = label }
end

local function sample_stacks()
  return {
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_a" },
      kinds = { "user", "user", "kernel" }, count = 3000, nanos = 3e9 },
    { comm = "myapp", pid = 42, frames = { "main", "work", "hot_b" }, count = 1000, nanos = 1e9 },
    { comm = "myapp", pid = 42, frames = { "main", "work", "tiny" }, count = 1, nanos = 1e6 },
  }
end

local function frame_count(text)
  return count(text, "<g data%-o=")
end

describe("svg writer", function()
  it("produces well-formed XML with the title and subtitle", function()
    local text = svg.render(sample_stacks(), { title = "CPU of myapp", subtitle = "99 Hz, 10 s" })
    assert_well_formed(text)
    assert.truthy(text:find('<text id="title"[^>]*>CPU of myapp</text>'))
    assert.truthy(text:find('<text id="subtitle"[^>]*>99 Hz, 10 s</text>'))
    assert.truthy(text:find("<script type=\"text/ecmascript\"><![CDATA[", 1, true))
    assert.is_nil(text:find("href=", 1, true))
  end)

  it("draws one rect per visible frame and omits frames under 0.1%", function()
    local text = svg.render(sample_stacks(), {})
    assert.are.equal(6, frame_count(text))
    assert.are.equal(6 + 1, count(text, "<rect "))  -- plus the background
    assert.is_nil(frame(text, "tiny"))
    for _, name in ipairs({ "all", "myapp", "main", "work", "hot_a", "hot_b" }) do
      assert.is_table(frame(text, name), name)
    end
  end)

  it("stacks the root at the bottom and widths proportional to value", function()
    local text = svg.render(sample_stacks(), {})
    local all, app, main = frame(text, "all"), frame(text, "myapp"), frame(text, "main")
    local a, b = frame(text, "hot_a"), frame(text, "hot_b")
    assert.is_true(all.y > app.y and app.y > main.y and main.y > a.y)
    assert.are.equal(a.y, b.y)
    assert.is_true(math.abs(a.w / b.w - 3) < 0.01)
    assert.is_true(math.abs(all.w - (a.w + b.w) * 4001 / 4000) < 0.05)
    assert.is_true(math.abs(b.x - (a.x + a.w)) < 0.02)
    assert.are.equal(3000, a.v)
    assert.are.equal(a.o + a.v, b.o)
  end)

  it("describes each frame with its share and value", function()
    local text = svg.render(sample_stacks(), {})
    assert.are.equal("3,000 samples, 74.98%)", frame(text, "hot_a").info)
    assert.are.equal("4,001 samples, 100.00%)", frame(text, "all").info)
    local off = svg.render(sample_stacks(), { off_cpu = true, unit = "nanoseconds" })
    assert.are.equal("3000.0 ms, 74.98%)", frame(off, "hot_a").info)
  end)

  it("colours kernel frames apart from warm user frames, deterministically", function()
    local text = svg.render(sample_stacks(), {})
    local user, kernel = frame(text, "hot_b"), frame(text, "hot_a")
    assert.is_true(user.r > user.b)
    assert.is_true(kernel.b > kernel.r)
    assert.are.equal(text, svg.render(sample_stacks(), {}))
  end)

  it("truncates labels to fit with ..", function()
    local long = string.rep("x", 300)
    local stacks = {
      { comm = "app", frames = { "main", long }, count = 1 },
      { comm = "app", frames = { "main", "other" }, count = 9 },
    }
    local text = svg.render(stacks, {})
    local f = frame(text, long)
    assert.truthy(f.label:match("^x+%.%.$"))
    assert.is_true(#f.label * 7.2 <= f.w)
  end)

  it("escapes names and keeps odd bytes well-formed", function()
    local stacks = {
      { comm = "a&b", frames = { "operator<<(T&, \"x\", 'y')", "bad\1\255utf8 \226\130" },
        count = 10 },
      { comm = "<script>", frames = { "é😀" }, count = 10 },
    }
    local text = svg.render(stacks, { title = "t<&>", subtitle = "\"s\"" })
    assert_well_formed(text)
    assert.truthy(text:find("operator&lt;&lt;(T&amp;, &quot;x&quot;, &apos;y&apos;)", 1, true))
    assert.truthy(text:find("<title>a&amp;b (", 1, true))
    assert.truthy(text:find("<title>&lt;script&gt; (", 1, true))
    assert.truthy(text:find(">t&lt;&amp;&gt;</text>", 1, true))
    assert.truthy(text:find("é😀", 1, true))
    assert.is_nil(text:find("<script>", 1, true))
  end)

  it("renders a valid graph with no samples", function()
    local text = svg.render({}, { title = "empty" })
    assert_well_formed(text)
    assert.are.equal(0, frame_count(text))
    assert.truthy(text:find("No samples were collected.", 1, true))
  end)

  it("writes the document to a file handle", function()
    local path = os.tmpname()
    local fh = assert(io.open(path, "w"))
    svg.write(sample_stacks(), { title = "file" }, fh)
    fh:close()
    fh = assert(io.open(path, "r"))
    local text = fh:read("*a")
    fh:close()
    os.remove(path)
    assert.are.equal(svg.render(sample_stacks(), { title = "file" }), text)
  end)

  it("keeps a 50k-stack profile under 10 MB", function()
    local stacks = {}
    for i = 1, 50000 do
      local frames = {}
      for d = 1, 20 + i % 30 do
        frames[d] = string.format("ns::Module%d::function_%d(int, std::string const&)",
                                  d % 7, (i * 7 + d * 13) % (d < 6 and 3 or 200))
      end
      stacks[i] = { comm = "app" .. i % 4, pid = i % 50, frames = frames, count = 1 + i % 17 }
    end
    local text = svg.render(stacks, { title = "big" })
    assert.is_true(#text < 10 * 1024 * 1024)
    assert.is_true(frame_count(text) > 100)
    assert_well_formed(text)
  end)

  it("caps the number of frames when many frames are wide enough", function()
    local stacks = {}
    for i = 1, 900 do
      local frames = {}
      for d = 1, 15 do frames[d] = "f" .. i .. "_" .. d end
      stacks[i] = { comm = "app", frames = frames, count = 1000 + i }
    end
    local text = svg.render(stacks, {})
    local n = frame_count(text)
    assert.is_true(n <= 10000 and n > 1000)
    assert.is_table(frame(text, "f900_15"))
    assert.is_nil(frame(text, "f1_1"))
  end)
end)
