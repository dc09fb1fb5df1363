-- consts_spec.lua - moonrover.consts and moonrover.consts_test, the header
-- constants the build writes as pure Lua, against the headers themselves:
-- every enum constant and MR_ macro they define is in one of them (what only
-- api_test.h declares in consts_test, never in the product's consts), with
-- the value the FFI gives it (rt.lib) and the value the C compiler computes.
local product = require("moonrover.consts")
local test_only = require("moonrover.consts_test")
local files = require("support.files")
local shell = require("support.shell")
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

local SOURCE = assert(os.getenv("MOONROVER_SOURCE_DIR"), "MOONROVER_SOURCE_DIR is not set")

-- The headers the build generates each module from (CMakeLists.txt's
-- CONST_HEADERS and CONST_TEST_HEADERS, handed over by ctest).
local function header_list(var)
  local list = {}
  for h in assert(os.getenv(var), var .. " is not set"):gmatch("%S+") do
    list[#list + 1] = h
  end
  return list
end
local PRODUCT_HEADERS = header_list("MOONROVER_CONST_HEADERS")
local HEADERS = header_list("MOONROVER_CONST_HEADERS")
for _, h in ipairs(header_list("MOONROVER_CONST_TEST_HEADERS")) do
  HEADERS[#HEADERS + 1] = h
end

-- Both modules as one table: specs see every constant.
local C = {}
for _, m in ipairs({ product, test_only }) do
  for name, v in pairs(m) do
    C[name] = v
  end
end

-- What cc prints for body compiled with flags, or with run, what the
-- program it built prints.
local function cc(flags, body, run)
  local dir = os.tmpname()
  os.remove(dir)
  shell.must("mkdir " .. dir)
  files.write(dir .. "/in.c", body)
  local out = shell.capture(string.format("cd %s && cc -I%s/runtime -I%s/bpf %s in.c", dir, SOURCE, SOURCE, flags))
  if run then
    out = shell.capture(dir .. "/a.out")
  end
  shell.must("rm -r " .. dir)
  return out
end

local function includes(headers)
  local lines = { "#include <stdio.h>" }
  for _, h in ipairs(headers or HEADERS) do
    lines[#lines + 1] = string.format('#include "%s/%s"', SOURCE, h)
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The names of the object-like MR_ macros with a value the headers define.
local function macro_names()
  local names = {}
  for name, rest in cc("-dM -E", includes()):gmatch("#define (MR_[%w_]+)([^\n]*)") do
    if rest:match("^%s+%S") then
      names[#names + 1] = name
    end
  end
  return names
end

-- The MR_ names left in the headers' preprocessed declarations: their enum
-- constants (macros are gone by then).
local function enum_names(text)
  local seen, names = {}, {}
  for name in text:gmatch("MR_[%w_]+") do
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  return names
end

local function sorted_names()
  local names = {}
  for name in pairs(C) do
    names[#names + 1] = name
  end
  table.sort(names)
  return names
end

-- Each constant of the module as the compiler computes it, by name.
local function compiled_values()
  local lines = { includes(), "int main(void)", "{" }
  for _, name in ipairs(sorted_names()) do
    local fmt = type(C[name]) == "string" and '  printf("%s=%%s\\n", %s);' or
      '  printf("%s=%%lld\\n", (long long)(%s));'
    lines[#lines + 1] = string.format(fmt, name, name)
  end
  lines[#lines + 1] = "  return 0;\n}\n"
  local values = {}
  for name, v in cc("", table.concat(lines, "\n"), true):gmatch("(MR_[%w_]+)=([^\n]*)") do
    values[name] = type(C[name]) == "string" and v or tonumber(v)
  end
  return values
end

describe("moonrover.consts", function()
  it("holds nothing of api_test.h but what the product's headers declare too", function()
    for name in pairs(test_only) do
      assert.is_nil(product[name], name)
    end
    assert.is_nil(product.MR_STREAM_BENCH)
    assert.equal(tonumber(lib.MR_STREAM_BENCH), test_only.MR_STREAM_BENCH)
    local names = enum_names((cc("-E -P -DMR_FFI_CDEF", includes(PRODUCT_HEADERS):gsub("#include <stdio.h>\n", ""))))
    for _, name in ipairs(names) do
      assert.is_not_nil(product[name], name)
    end
  end)


  it("holds every enum constant of the FFI declarations, with the value the FFI gives it", function()
    local text = ffi.string(lib.mr_api_cdef()) .. ffi.string(lib.mr_api_test_cdef())
    local names = enum_names(text)
    assert.is_true(#names > 0)
    for _, name in ipairs(names) do
      assert.equal(tonumber(lib[name]), C[name], name)
    end
  end)

  it("holds every enum constant and MR_ macro of the headers", function()
    local names = enum_names((cc("-E -P -DMR_FFI_CDEF", includes():gsub("#include <stdio.h>\n", ""))))
    for _, name in ipairs(macro_names()) do
      names[#names + 1] = name
    end
    for _, name in ipairs(names) do
      assert.is_not_nil(C[name], name)
    end
  end)

  it("holds the value the C compiler computes for each constant", function()
    local values = compiled_values()
    for _, name in ipairs(sorted_names()) do
      assert.equal(values[name], C[name], name)
    end
  end)
end)
