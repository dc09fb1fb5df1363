-- Specs for the descriptor-driven protobuf codec, checked against protoc's
-- own descriptors and against Python's protobuf runtime (Debian's).
local protobuf = require("moonrover.lib.protobuf")
local files = require("support.files")
local read, write = files.read, files.write

local FIXTURES = debug.getinfo(1, "S").source:match("^@(.*/)") .. "../fixtures/protobuf/"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  return ok, out
end

local SAMPLE = {
  d = 2.5, f = -1.25, i64 = -1234567890123, u64 = 2 ^ 52 + 7, i32 = -42, fx64 = 2 ^ 40 + 3,
  fx32 = 4000000000, b = true, s = "héllo \0 world", pair = { key = "k", value = -9 }, raw = "\1\2\255",
  u32 = 4294967295, color = 2, sfx32 = -7, sfx64 = -2 ^ 40, si32 = -300, si64 = 123456789012,
  pairs = { { key = "a", value = 1 }, { key = "b", value = 2 } }, numbers = { 1, -1, 300 },
  names = { "x", "y" }, nested = { key = "n", value = 0 },
}

describe("protobuf", function()
  local dir, schema

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 700 " .. dir) == 0)
    local ok, out = sh(string.format(
      "protoc --proto_path=%s --descriptor_set_out=%s/sample.pb --python_out=%s %ssample.proto",
      FIXTURES, dir, dir, FIXTURES))
    assert(ok, out)
    schema = assert(protobuf.load_descriptor_set(read(dir .. "/sample.pb")))
  end)

  teardown(function()
    os.execute("rm -rf " .. dir)
  end)

  it("reads message and enum descriptors from protoc's output", function()
    assert.is_truthy(schema.messages[".sample.v1.Everything"])
    assert.is_truthy(schema.messages[".sample.v1.Pair"])
    assert.same({ RED = 0, GREEN = 1, BLUE = 2 }, schema.enums[".sample.v1.Color"])
  end)

  it("round-trips every field kind", function()
    local bytes = assert(protobuf.encode(schema, "sample.v1.Everything", SAMPLE))
    local back = assert(protobuf.decode(schema, "sample.v1.Everything", bytes))
    assert.same(SAMPLE.s, back.s)
    assert.same(SAMPLE.pairs, back.pairs)
    for k, v in pairs(SAMPLE) do
      if k == "f" then
        assert.is_true(math.abs(back.f - v) < 1e-6)
      else
        assert.same(v, back[k], k)
      end
    end
  end)

  it("writes what Python's protobuf reads, and reads what it writes (packed repeated included)", function()
    write(dir .. "/lua.bin", assert(protobuf.encode(schema, "sample.v1.Everything", SAMPLE)))
    local script = dir .. "/check.py"
    write(script, [[
import sys
sys.path.insert(0, sys.argv[1])
import sample_pb2
m = sample_pb2.Everything()
m.ParseFromString(open(sys.argv[1] + "/lua.bin", "rb").read())
assert m.i64 == -1234567890123 and m.u64 == 2**52 + 7 and m.i32 == -42, m
assert m.s == "h\u00e9llo \x00 world" and m.raw == b"\x01\x02\xff", m
assert m.pair.value == -9 and [p.key for p in m.pairs] == ["a", "b"], m
assert list(m.numbers) == [1, -1, 300] and m.sfx64 == -2**40 and m.si32 == -300, m
assert m.color == 2 and m.WhichOneof("choice") == "nested", m
out = sample_pb2.Everything(i64=-5, numbers=[7, 8, 9], names=["p"], pairs=[sample_pb2.Pair(key="q", value=3)], b=True)
open(sys.argv[1] + "/py.bin", "wb").write(out.SerializeToString())
print("ok")
]])
    local ok, out = sh("/usr/bin/python3 " .. script .. " " .. dir)
    assert(ok, out)
    local back = assert(protobuf.decode(schema, "sample.v1.Everything", read(dir .. "/py.bin")))
    assert.same(-5, back.i64)
    assert.same({ 7, 8, 9 }, back.numbers)
    assert.same({ "p" }, back.names)
    assert.same({ { key = "q", value = 3 } }, back.pairs)
    assert.is_true(back.b)
  end)

  it("refuses unknown fields and types when encoding, with the reason", function()
    local bytes, err = protobuf.encode(schema, "sample.v1.Pair", { key = "k", nope = 1 })
    assert.is_nil(bytes)
    assert.same(".sample.v1.Pair has no field nope", err)
    bytes, err = protobuf.encode(schema, "sample.v1.Missing", {})
    assert.is_nil(bytes)
    assert.same("unknown message type .sample.v1.Missing", err)
    bytes, err = protobuf.encode(schema, "sample.v1.Everything", { pairs = "x" })
    assert.is_nil(bytes)
    assert.same("field pairs is repeated: give it a list", err)
  end)

  it("skips unknown fields and rejects truncated input without raising", function()
    local bytes = assert(protobuf.encode(schema, "sample.v1.Everything", SAMPLE))
    local pair = assert(protobuf.decode(schema, "sample.v1.Pair", assert(protobuf.encode(schema,
      "sample.v1.Everything", { s = "skip me", i32 = 1 }))))
    assert.same({}, pair)
    for cut = 1, #bytes - 1, 7 do
      local ok = pcall(protobuf.decode, schema, "sample.v1.Everything", bytes:sub(1, cut))
      assert.is_true(ok)
    end
    local v, err = protobuf.decode(schema, "sample.v1.Everything", "\255\255\255\255\255\255\255\255\255\255\255")
    assert.is_nil(v)
    assert.is_string(err)
    assert.is_nil(protobuf.load_descriptor_set("garbage"))
  end)
end)
