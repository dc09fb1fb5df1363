-- Specs for the JSON reader of OAP's command arguments: values, escapes,
-- nesting, and bad text as a message, never a raise.
local json = require("moonrover.lib.json_decode")

describe("json_decode", function()
  it("reads objects, arrays, strings, numbers, booleans and null", function()
    local v = json.decode(' {"a": [1, -2.5, 3e2, true, false, null, "x"], "b": {"c": {}}, "d": []} ')
    assert.same({ a = { 1, -2.5, 300, true, false, nil, "x" }, b = { c = {} }, d = {} }, v)
    assert.equal("x", v.a[7])
    assert.is_nil(json.decode("null"))
    assert.equal(0, json.decode("0"))
  end)

  it("reads escapes, \\u ones and surrogate pairs into UTF-8", function()
    assert.equal('q"\\/\b\f\n\r\t', json.decode('"q\\"\\\\\\/\\b\\f\\n\\r\\t"'))
    assert.equal("é€", json.decode('"\\u00e9\\u20ac"'))
    assert.equal("\240\159\152\128", json.decode('"\\ud83d\\ude00"'))
  end)

  it("takes DEL unescaped, as JSON allows, and refuses a raw control character", function()
    assert.equal("a\127b", json.decode('"a\127b"'))
    assert.is_nil((json.decode('"a\31b"')))
  end)

  it("reads what OAP sends as a task's ExtensionConfigJSON", function()
    local v = json.decode('{"NetworkSamplings":[{"URIRegex":"/api/.*","MinDuration":100,"When4xx":true,'
      .. '"When5xx":true,"Settings":{"RequireCompleteRequest":true,"MaxRequestSize":-1}}]}')
    assert.same({ URIRegex = "/api/.*", MinDuration = 100, When4xx = true, When5xx = true,
      Settings = { RequireCompleteRequest = true, MaxRequestSize = -1 } }, v.NetworkSamplings[1])
  end)

  it("says what is wrong with bad text, and where", function()
    local cases = {
      { "", "unexpected end at character 1" },
      { "[1,", "unexpected end at character 4" },
      { '{"a" 1}', "expected ':' at character 6" },
      { '{"a":1,}', "expected a name at character 8" },
      { "[1 2]", "expected ',' or ']' at character 4" },
      { '"abc', "unterminated string at character 1" },
      { '"a\\x"', "bad escape at character 3" },
      { '"\\u12"', "bad \\u escape at character 4" },
      { "01", "bad number at character 1" },
      { "tru", "unexpected character at character 1" },
      { "1 2", "text after the value at character 3" },
      { string.rep("[", 100), "nested deeper than 64 at character 66" },
    }
    for _, c in ipairs(cases) do
      local v, err = json.decode(c[1])
      assert.is_nil(v)
      assert.equal(c[2], err)
    end
    assert.same({ nil, "not a string" }, { json.decode(nil) })
  end)
end)
