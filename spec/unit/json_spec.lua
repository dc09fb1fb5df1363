-- Specs for spec/support/json.lua, the small JSON decoder and encoder the
-- stand-in OAP helpers use.
local json = require("support.json")

describe("json.decode", function()
  it("decodes literals and numbers", function()
    assert.is_true(json.decode("true"))
    assert.is_false(json.decode(" false "))
    assert.equals(json.null, json.decode("null"))
    assert.equals(0, json.decode("0"))
    assert.equals(-12, json.decode("-12"))
    assert.equals(3.25, json.decode("3.25"))
    assert.equals(-1.5e-3, json.decode("-1.5E-3"))
    assert.equals(1700000000000, json.decode("1700000000000"))
  end)

  it("decodes strings with every escape", function()
    assert.equals('a"b\\c/d\b\f\n\r\te', json.decode([["a\"b\\c\/d\b\f\n\r\te"]]))
    assert.equals("", json.decode('""'))
  end)

  it("decodes \\u escapes to UTF-8, surrogate pairs included", function()
    assert.equals("A", json.decode([["\u0041"]]))
    assert.equals("caf\195\169", json.decode([["caf\u00e9"]]))
    assert.equals("\226\128\148", json.decode([["\u2014"]]))
    assert.equals("\240\159\154\128", json.decode([["\ud83d\ude80"]]))
    assert.equals("\240\159\154\128", json.decode([["\uD83D\uDE80"]]))
  end)

  it("keeps raw UTF-8 as it is", function()
    assert.equals("w\195\182rker", json.decode('"w\195\182rker"'))
  end)

  it("decodes nested objects and arrays", function()
    local v = json.decode([=[ {"a": [1, {"b": null}, []], "c": {}, "d": "x"} ]=])
    assert.same({ 1, { b = json.null }, {} }, v.a)
    assert.same({}, v.c)
    assert.equals("x", v.d)
  end)

  it("keeps nulls in arrays so lengths are right", function()
    local v = json.decode("[null, 2, null]")
    assert.equals(3, #v)
    assert.equals(json.null, v[3])
  end)

  it("decodes a recorded stub line", function()
    local line = [[{"rpc":"queryTasks","call":3,"time":1795983104958,"metadata":{"authentication":"s3cret"},]]
      .. [["message":{"roverInstanceId":"0b7e","latestUpdateTime":"0"}}]]
    local v = json.decode(line)
    assert.equals("queryTasks", v.rpc)
    assert.equals(1795983104958, v.time)
    assert.equals("s3cret", v.metadata.authentication)
    assert.equals("0", v.message.latestUpdateTime)
  end)

  it("reports malformed text with a position", function()
    local cases = { "", "{", "[1,]", '{"a" 1}', '{a:1}', '"abc', '"\\x"', '"\\u12"', "01",
      "-", "tru", "nulls", "[1] 2", '"a\nb"', "{,}" }
    for _, text in ipairs(cases) do
      local v, err = json.decode(text)
      assert.is_nil(v, text)
      assert.matches("at byte %d+", err, 1, false, text)
    end
  end)
end)

describe("json.encode", function()
  it("encodes scalars", function()
    assert.equals("true", json.encode(true))
    assert.equals("null", json.encode(json.null))
    assert.equals("1700000000000", json.encode(1700000000000))
    assert.equals("-3", json.encode(-3))
    assert.equals("0.5", json.encode(0.5))
    assert.equals('"a\\"b\\\\c\\n\\u0001"', json.encode('a"b\\c\n\1'))
  end)

  it("encodes arrays and objects with sorted keys", function()
    assert.equals('[1,"x",{"a":[],"b":false}]',
      json.encode({ 1, "x", { b = false, a = json.array({}) } }))
    assert.equals("{}", json.encode({}))
  end)

  it("refuses what JSON cannot hold", function()
    assert.has_error(function() json.encode(0 / 0) end)
    assert.has_error(function() json.encode(print) end)
    assert.has_error(function() json.encode({ [true] = 1 }) end)
  end)

  it("round-trips through decode", function()
    local v = { taskId = "t\195\169", processIds = { "a", "b" }, updateTime = 1700000000123,
      extensionConfig = { NetworkSamplings = { { When4xx = true, MinDuration = 500 } } } }
    assert.same(v, json.decode(json.encode(v)))
  end)
end)
