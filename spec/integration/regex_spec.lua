-- regex_spec.lua - POSIX extended regular expressions through the FFI:
-- matching, submatch offsets, and the error of an invalid pattern.
local errno = require("support.errno")
local rt = require("moonrover.rt")
local ffi, lib = rt.ffi, rt.lib

local function compile(pattern)
  local r, err = rt.call(lib.mr_regex_new, pattern)
  if r == nil then return nil, err end
  return ffi.gc(r, lib.mr_regex_free)
end

-- Matches s; returns the result and the offsets of max groups as a table.
local function match(r, s, max)
  local groups = ffi.new("int32_t[?]", 2 * max + 1)
  local rc = rt.call(lib.mr_regex_match, r, s, groups, max)
  local out = {}
  for i = 0, 2 * max - 1 do out[#out + 1] = groups[i] end
  return rc, out
end

describe("regex", function()
  it("matches extended syntax", function()
    local r = assert(compile("^(nginx|envoy)-[0-9]+$"))
    assert.equal(1, rt.call(lib.mr_regex_match, r, "nginx-42", nil, 0))
    assert.equal(1, rt.call(lib.mr_regex_match, r, "envoy-7", nil, 0))
    assert.equal(0, rt.call(lib.mr_regex_match, r, "nginx-", nil, 0))
    assert.equal(0, rt.call(lib.mr_regex_match, r, "xnginx-42", nil, 0))
    local b = assert(compile("a+|b{2}"))
    assert.equal(1, rt.call(lib.mr_regex_match, b, "xbbx", nil, 0))
    assert.equal(0, rt.call(lib.mr_regex_match, b, "xbx", nil, 0))
  end)

  it("gives group offsets, start and end", function()
    local r = assert(compile("([a-z]+)=([0-9]+)"))
    assert.same({ 1, { 4, 12, 4, 9, 10, 12 } }, { match(r, "set timer=30;", 3) })
  end)

  it("gives only the groups asked for", function()
    local r = assert(compile("([a-z]+)=([0-9]+)"))
    assert.same({ 1, { 0, 4 } }, { match(r, "ab=1", 1) })
  end)

  it("marks groups that took no part or do not exist with -1", function()
    local r = assert(compile("a(b)?(c)"))
    assert.same({ 1, { 0, 2, -1, -1, 1, 2, -1, -1 } }, { match(r, "ac", 4) })
  end)

  it("leaves the groups alone when nothing matches", function()
    local r = assert(compile("^java"))
    local groups = ffi.new("int32_t[2]", 7, 7)
    assert.equal(0, rt.call(lib.mr_regex_match, r, "/usr/bin/javac", groups, 1))
    assert.same({ 7, 7 }, { groups[0], groups[1] })
  end)

  it("reports an invalid pattern with the reason", function()
    local r, err = compile("a(b")
    assert.is_nil(r)
    local reason = err:match('^invalid regular expression "a%(b": (.+)$')
    assert.truthy(reason, err)
    local r2, err2 = compile("x{2,1}")
    assert.is_nil(r2)
    assert.truthy(err2:match('^invalid regular expression "x{2,1}": .+$'), err2)
  end)

  it("rejects bad arguments", function()
    local r = assert(compile("a"))
    local refused = "regex match: no expression, no text or no room for the groups"
    assert.same({ nil, refused }, { rt.call(lib.mr_regex_match, r, nil, nil, 0) })
    assert.same({ nil, refused }, { rt.call(lib.mr_regex_match, r, "a", nil, 2) })
    assert.same({ nil, refused }, { rt.call(lib.mr_regex_match, nil, "a", nil, 0) })
    assert.is_nil((compile(nil)))
  end)

  it("sets errno when it returns NULL, for a C caller to pass up", function()
    ffi.errno(0)
    assert.is_nil(compile("a(b"))
    assert.equal(errno.EINVAL, ffi.errno())
    ffi.errno(0)
    assert.is_nil(compile(nil))
    assert.equal(errno.EINVAL, ffi.errno())
  end)
end)
