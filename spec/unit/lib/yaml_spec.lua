-- Specs for moonrover.lib.yaml: libyaml's events turned into configuration values
-- (strings, nils, sequences), what is refused, and error lines.
local yaml = require("moonrover.lib.yaml")

local function parse(text)
  return yaml.parse(text, "test.yaml")
end

local function parse_ok(text)
  local value, err = parse(text)
  assert.is_nil(err)
  return value
end

local function parse_err(text)
  local value, err = parse(text)
  assert.is_nil(value)
  assert.is_string(err)
  return err
end

describe("yaml.parse block mappings", function()
  it("parses nested mappings at any consistent indentation width", function()
    assert.same({ a = { b = { c = "1" }, d = "2" }, e = "3" },
      parse_ok("a:\n    b:\n     c: 1\n    d: 2\ne: 3\n"))
  end)

  it("keeps every scalar a string, nulls excepted", function()
    assert.same({ t = "true", n = "10", d = "20s", f = "1.5", s = "x y", y = "yes", o = "0x1F" },
      parse_ok("t: true\nn: 10\nd: 20s\nf: 1.5\ns: x y\ny: yes\no: 0x1F\n"))
  end)

  it("turns empty values, ~ and null into nil, but not quoted ones", function()
    local v = parse_ok("a:\nb: ~\nc: null\nd: NULL\ne: 'null'\nf: x\ng: \"\"\n")
    assert.same({ e = "null", f = "x", g = "" }, v)
  end)

  it("accepts quoted keys and keys with inner colons, and keeps keys as written", function()
    assert.same({ ["a b"] = "1", ["it's"] = "2", ["http://x"] = "3", ["1"] = "4", null = "5", Key = "6" },
      parse_ok("\"a b\": 1\n'it''s': 2\nhttp://x: 3\n1: 4\nnull: 5\nKey: 6\n"))
  end)

  it("keeps colons that are not followed by a space inside plain values", function()
    assert.same({ addr = "localhost:11800", url = "http://h:1/p" },
      parse_ok("addr: localhost:11800\nurl: http://h:1/p\n"))
  end)

  it("refuses duplicate keys with both line numbers, in flow mappings too", function()
    assert.equal('test.yaml:3: duplicate key "a" (first at line 1)', parse_err("a: 1\nb: 2\na: 3\n"))
    assert.equal('test.yaml:2: duplicate key "k" (first at line 1)', parse_err("m: {k: 1,\n  k: 2}\n"))
    assert.equal('test.yaml:2: duplicate key "a" (first at line 1)', parse_err("a: 1\n'a': 2\n"))
  end)

  it("reports inconsistent indentation with the line", function()
    assert.matches("^test.yaml:3: ", parse_err("a:\n  b: 1\n   c: 2\n"))
    assert.matches("^test.yaml:2: ", parse_err("- a: 1\n   b: 2\n"))
    assert.matches("^test.yaml:3: ", parse_err("a:\n    b: 1\n  c: 2\n"))
  end)

  it("rejects tabs in indentation, naming them", function()
    assert.equal("test.yaml:2: tab character in indentation (indent with spaces)",
      parse_err("a:\n\tb: 1\n"))
    assert.equal("test.yaml:3: tab character in indentation (indent with spaces)",
      parse_err("a:\n  b: 1\n \t c: 2\n"))
  end)

  it("accepts tabs after the colon and inside values", function()
    assert.same({ a = "1", b = "x\ty" }, parse_ok("a:\t1\nb: \"x\ty\"\n"))
  end)

  it("rejects a ': ' inside a plain value", function()
    assert.matches("^test.yaml:1: mapping values are not allowed", parse_err("a: b: c\n"))
  end)
end)

describe("yaml.parse block sequences", function()
  it("parses a sequence of scalars", function()
    local v = parse_ok("- a\n- 'b'\n-   c\n")
    assert.same({ "a", "b", "c" }, v)
    assert.is_true(yaml.is_sequence(v))
  end)

  it("parses a sequence of mappings with keys indented under the dash", function()
    assert.same({ list = { { name = "x", port = "1", sub = { k = "v" } }, { name = "y" } } },
      parse_ok("list:\n  - name: x\n    port: 1\n    sub:\n      k: v\n  - name: y\n"))
  end)

  it("accepts a sequence at the same indentation as its key", function()
    assert.same({ a = { "1", "2" }, b = "3" }, parse_ok("a:\n- 1\n- 2\nb: 3\n"))
  end)

  it("parses nested sequences and items on the following line", function()
    assert.same({ { "a", "b" }, { k = "v" }, "c" }, parse_ok("- - a\n  - b\n-\n  k: v\n- c\n"))
  end)

  it("keeps the places of null items", function()
    local v = parse_ok("- a\n- ~\n- c\n")
    assert.equal(3, table.maxn(v))
    assert.is_nil(v[2])
  end)

  it("keeps an empty list apart from an empty mapping", function()
    local v = parse_ok("l: []\nm: {}\n")
    assert.is_true(yaml.is_sequence(v.l))
    assert.is_false(yaml.is_sequence(v.m))
  end)

  it("rejects a sequence item where a key is expected", function()
    assert.equal("test.yaml:2: did not find expected key while parsing a block mapping that starts at line 1",
      parse_err("a: 1\n- b\n"))
  end)
end)

describe("yaml.parse scalars", function()
  it("decodes double-quoted escapes", function()
    assert.same({ v = 'a\nb\tc"d\\e\194\181\240\159\152\128/' },
      parse_ok([[v: "a\nb\tc\"d\\e\u00b5\U0001F600\/"]] .. "\n"))
  end)

  it("refuses \\u surrogates, which YAML does not pair up as JSON does", function()
    assert.matches("^test.yaml:1: found invalid Unicode character escape code", parse_err([[v: "\ud83d\ude00"]]))
  end)

  it("reports a bad escape with its line", function()
    assert.equal("test.yaml:2: found unknown escape character while parsing a quoted scalar",
      parse_err('a: 1\nb: "\\q"\n'))
    assert.matches("^test.yaml:1: did not find expected hexdecimal number", parse_err('b: "\\u12"\n'))
  end)

  it("decodes '' in single quotes and keeps backslashes", function()
    assert.same({ v = "it's \\n" }, parse_ok("v: 'it''s \\n'\n"))
  end)

  it("does not treat # inside quotes or words as a comment", function()
    assert.same({ a = "x # y", b = "x#y", c = "z" }, parse_ok("a: 'x # y'\nb: x#y\nc: z # comment\n"))
  end)

  it("folds multi-line plain and quoted scalars", function()
    assert.same({ a = "one two\nthree", b = "x y", c = "joined" },
      parse_ok('a: one\n  two\n\n  three\nb: "x\n   y"\nc: "join\\\n   ed"\n'))
  end)

  it("reports an unterminated quoted scalar at the end, naming where it starts", function()
    assert.equal("test.yaml:3: found unexpected end of stream while scanning a quoted scalar that starts at line 2",
      parse_err("a: 1\nb: 'open\nc: 2\n"))
  end)

  it("accepts a comment right after a closing quote", function()
    assert.same({ a = "x", b = { "y" } }, parse_ok("a: 'x'# c\nb: [y]# c\n"))
  end)

  it("rejects text after a closing quote", function()
    assert.matches("^test.yaml:1: ", parse_err('a: "x" y\n'))
  end)
end)

describe("yaml.parse block scalars", function()
  it("keeps line breaks with | and clips the final one", function()
    assert.same({ a = "one\n  two\n\nthree\n", b = "x" },
      parse_ok("a: |\n  one\n    two\n\n  three\n\n\nb: x\n"))
  end)

  it("folds lines with >", function()
    assert.same({ a = "one two\nnew para\n  kept\nend\n" },
      parse_ok("a: >\n  one\n  two\n\n  new para\n    kept\n  end\n"))
  end)

  it("strips with - and keeps with +", function()
    assert.same({ s = "text", k = "text\n\n" }, parse_ok("s: |-\n  text\n\nk: |+\n  text\n\n"))
  end)

  it("adds no line break the file does not have", function()
    assert.same({ a = "x" }, parse_ok("a: |\n  x"))
    assert.same({ a = "x\n" }, parse_ok("a: |+\n  x\n"))
  end)

  it("honours an indentation indicator", function()
    assert.same({ a = "  indented\nline\n" }, parse_ok("a: |2\n    indented\n  line\n"))
  end)

  it("gives an empty string for an empty block", function()
    assert.same({ a = "", b = "1" }, parse_ok("a: |\nb: 1\n"))
  end)

  it("works as a sequence item", function()
    assert.same({ "x\ny\n", "z" }, parse_ok("- |\n  x\n  y\n- z\n"))
  end)

  it("rejects a bad header", function()
    assert.matches("^test.yaml:1: did not find expected comment or line break", parse_err("a: |x\n  y\n"))
  end)
end)

describe("yaml.parse flow collections", function()
  it("parses sequences and mappings, nested", function()
    assert.same({ a = { "x", "y z", { k = "v", q = "a,b" } }, b = {} },
      parse_ok("a: [x, y z, {k: v, q: 'a,b'}]\nb: {}\n"))
  end)

  it("accepts trailing commas, empty values and comments", function()
    assert.same({ a = { "1", "2" }, b = { k = "1" } }, parse_ok("a: [1, 2,] # c\nb: {k: 1, n: }\n"))
  end)

  it("accepts a flow collection spread over lines", function()
    assert.same({ a = { "1", "2" }, b = { k = { "x" } } }, parse_ok("a: [1,\n  2]\nb: {k:\n  [x]}\n"))
  end)

  it("reports a flow collection left open", function()
    assert.matches("^test.yaml:2: .* flow", parse_err("a: 1\nb: {k: [1\n"))
  end)

  it("rejects empty entries and text after the collection", function()
    assert.matches("^test.yaml:1: did not find expected node content", parse_err("a: [1, , 2]\n"))
    assert.matches("^test.yaml:1: ", parse_err("a: [1] x\n"))
  end)
end)

describe("yaml.parse documents", function()
  it("ignores a leading --- and comments, and handles CRLF and a BOM", function()
    assert.same({ a = { b = "1" }, c = "2" },
      parse_ok("\239\187\191# head\r\n---\r\na:\r\n  b: 1 # x\r\nc: 2\r\n"))
  end)

  it("returns nil without a message for an empty document", function()
    for _, text in ipairs({ "", "# nothing\n\n", "---\n", "~\n" }) do
      local v, err = parse(text)
      assert.is_nil(v, text)
      assert.is_nil(err, text)
    end
  end)

  it("returns a top-level scalar or list as it is", function()
    assert.equal("x", parse_ok("x\n"))
    assert.same({ "x" }, parse_ok("[x]\n"))
  end)

  it("rejects a second document", function()
    assert.equal("test.yaml:2: only one YAML document is supported", parse_err("a: 1\n---\nb: 2\n"))
    assert.matches("^test.yaml:3: ", parse_err("a: 1\n...\nb: 2\n"))
  end)

  it("rejects anchors, aliases and tags with their line", function()
    assert.equal("test.yaml:2: anchors (&) are not supported", parse_err("a: 1\nb: &x 2\n"))
    assert.equal("test.yaml:1: aliases (*) are not supported", parse_err("a: *x\n"))
    assert.equal("test.yaml:2: tags (!) are not supported", parse_err("a:\n  - !!str 1\n"))
    assert.equal("test.yaml:1: aliases (*) are not supported", parse_err("<<: *base\n"))
    assert.equal("test.yaml:1: anchors (&) are not supported", parse_err("a: [&x 1]\n"))
    assert.equal("test.yaml:2: anchors (&) are not supported", parse_err("a: 1\nb: &m\n  c: 2\n"))
    assert.equal("test.yaml:1: aliases (*) are not supported", parse_err("*x : 1\n"))
    assert.equal("test.yaml:1: tags (!) are not supported", parse_err("!t {a: 1}\n"))
  end)

  it("accepts an explicit key that is a single value, and no list or mapping as a key", function()
    assert.same({ a = "b" }, parse_ok("? a\n: b\n"))
    local msg = "a mapping key must be a single value, not a list or a mapping"
    assert.equal("test.yaml:1: " .. msg, parse_err("? [a]\n: b\n"))
    assert.equal("test.yaml:2: " .. msg, parse_err("x: 1\n{k: v}: b\n"))
  end)

  it("rejects a missing key", function()
    assert.matches("^test.yaml:2: ", parse_err("a: 1\n: x\n"))
    assert.equal("test.yaml:1: a mapping key is missing", parse_err("?\n: x\n"))
    assert.equal("test.yaml:1: a mapping key is missing", parse_err("{? : x}\n"))
  end)

  it("rejects control characters and invalid UTF-8, naming the byte", function()
    assert.equal("test.yaml:2: control characters are not allowed (0x01)", parse_err("a: 1\nb: \1\n"))
    assert.equal("test.yaml:3: invalid leading UTF-8 octet (0xFF)", parse_err("a: 1\r\n\r\nb: \255\n"))
    assert.equal("test.yaml:1: control characters are not allowed (0x00)", parse_err("a: \0\n"))
  end)

  it("names the source, with a default when none is given", function()
    local _, err = yaml.parse("a: [", nil)
    assert.matches("^<yaml>:1: ", err)
    _, err = yaml.parse(nil)
    assert.equal("<yaml>:1: expected YAML text, got nil", err)
  end)
end)

describe("yaml.parse on garbage", function()
  local SAMPLE = "a:\n  b: [1, 'x', {c: \"d\\n\"}]\n  - e\nf: |\n  g\n---\n\t'h\n&i *j !k ? : # \r\n"
  local PIECES = { "a", ":", " ", "  ", "\n", "- ", "'", '"', "\\", "[", "]", "{", "}", ",", "#",
    "|", ">", "-", "+", "\t", "\r\n", "---", "~", "&", "*", "!", "?", "%", "1", "\\u", "x: ", "...",
    "\255", "\0", "\239\187\191" }

  local function check(text)
    local ok, value, err = pcall(yaml.parse, text, "fuzz")
    assert.is_true(ok, "parse raised on " .. string.format("%q", text))
    if value == nil and err ~= nil then
      assert.matches("^fuzz:%d+: [^\n]+$", err)
      assert.is_nil(err:find("internal parser error", 1, true), err)
    end
  end

  it("never raises on random bytes", function()
    math.randomseed(7)
    for _ = 1, 300 do
      local bytes = {}
      for k = 1, math.random(0, 60) do
        bytes[k] = string.char(math.random(0, 255))
      end
      check(table.concat(bytes))
    end
  end)

  it("never raises on random YAML-like text", function()
    math.randomseed(11)
    for _ = 1, 2000 do
      local parts = {}
      for k = 1, math.random(1, 40) do
        parts[k] = PIECES[math.random(#PIECES)]
      end
      check(table.concat(parts))
    end
  end)

  it("never raises on truncations of a document", function()
    for n = 0, #SAMPLE do
      check(SAMPLE:sub(1, n))
    end
  end)

  it("refuses absurd nesting with a message", function()
    assert.equal("test.yaml:1: nesting too deep", parse_err("a: " .. ("["):rep(5000)))
    assert.matches("^test.yaml:%d+: nesting too deep", parse_err(("- "):rep(1000) .. "x"))
    local deep = {}
    for i = 1, 300 do
      deep[i] = ("  "):rep(i - 1) .. "k:"
    end
    assert.equal("test.yaml:201: nesting too deep", parse_err(table.concat(deep, "\n") .. " x\n"))
  end)

  it("reads a large flat document", function()
    local lines = {}
    for i = 1, 20000 do
      lines[i] = "key" .. i .. ": value " .. i
    end
    local v = parse_ok(table.concat(lines, "\n"))
    assert.equal("value 20000", v.key20000)
  end)
end)
