-- script_memory_spec.lua - the allocator behind a script's memory budget
-- (runtime/script_host/script_memory.c), with its own block list and with
-- the counting wrapper used where LuaJIT refuses a custom allocator: what it
-- counts against LuaJIT's own count, and where a growing script stops.
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib

local MIB = 1024 * 1024

-- Runs chunk under a budget; returns the outcome (0 ran, 1 stopped), the
-- bytes the allocator held and the bytes LuaJIT counted.
local function try(chunk, limit, wrapped)
  local held, counted = ffi.new("uint64_t[1]"), ffi.new("uint64_t[1]")
  local rc, err = rt.call(lib.mr_script_memory_try, chunk, limit, wrapped and 1 or 0, held, counted)
  assert(rc, err)
  return rc, tonumber(held[0]), tonumber(counted[0])
end

local GROW = [[
local kept = {}
while true do kept[#kept + 1] = string.rep("x", 1000) .. #kept end
]]

-- The same inside pcall: a chunk gets no memory error to catch, its call
-- ends (LuaJIT can crash when an allocation fails in compiled code).
local GROW_AND_CATCH = [[
local kept = {}
for _ = 1, 100 do
  pcall(function() while true do kept[#kept + 1] = string.rep("x", 1000) .. #kept end end)
end
]]

describe("a script's memory budget", function()
  for _, mode in ipairs({ { "its own allocator", false }, { "the wrapper of LuaJIT's allocator", true } }) do
    local name, wrapped = mode[1], mode[2]

    describe("with " .. name, function()
      it("stops a growing chunk within its last allocation of the budget", function()
        local rc, held = try(GROW, 16 * MIB, wrapped)
        assert.same(1, rc)
        assert.is_true(held <= 16 * MIB, held)
        -- what was not made was a string or the table's array doubling (under 1 MiB here)
        assert.is_true(held > 15 * MIB, held)
      end)

      it("stops a chunk that would catch a memory error and keep allocating", function()
        local rc, held = try(GROW_AND_CATCH, 8 * MIB, wrapped)
        assert.same(1, rc)
        assert.is_true(held <= 8 * MIB, held)
      end)

      it("lets a chunk under its budget run, counting what LuaJIT counts", function()
        local rc, held, counted = try("local t = {} for i = 1, 5000 do t[i] = ('y'):rep(100) .. i end", 64 * MIB,
          wrapped)
        assert.same(0, rc)
        assert.same(counted, held)
      end)
    end)
  end

  it("reports a chunk's own error", function()
    local held, counted = ffi.new("uint64_t[1]"), ffi.new("uint64_t[1]")
    local rc, err = rt.call(lib.mr_script_memory_try, "error('plain failure')", 16 * MIB, 0, held, counted)
    assert.is_nil(rc)
    assert.matches("plain failure", err)
  end)
end)
