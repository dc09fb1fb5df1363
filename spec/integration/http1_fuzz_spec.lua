-- Fuzz spec of the HTTP/1 protocol module: two million records made
-- from the real streams of spec/fixtures/http1 by bit flips, byte insertions
-- and deletions, splices of other streams, random chunking, random copies
-- shorter than the record, and gaps, idle calls and closes between them.
-- Each record's copied bytes are placed at the very end of guarded memory
-- (runtime/base/guarded_buffer.c), so that a read past `copied` faults the
-- process instead of passing; one record in eight goes at its very start
-- instead, for reads before the first byte. The body bytes on_data says need
-- no copy are, in half the cases, fed back as the tracer feeds them once the
-- kernel skips them: pieces with nothing copied (ptr nil), a record inside
-- the skip whole, one crossing its end split in a skipped piece and the
-- copied rest. No call may raise, and every exchange must be well formed;
-- on_data returns a count of bytes; at_rest is true only of a state that
-- holds nothing; detect sees every record too. Seeded: every run makes the
-- same inputs.
local rt = require("moonrover.rt").with_test_api()
local ffi, lib = rt.ffi, rt.lib
local C = require("moonrover.consts")
local bit = require("bit")
local http1 = require("moonrover.net.protocols.http1")
local capture = require("fixtures.http1.capture")
local serialize = require("moonrover.lib.serialize")

local RECORDS = 2000000 -- on_data calls at least
local SEED = 20261201
local COPY_CAP = C.MR_NET_PAYLOAD_DEFAULT
local WINDOW = 12 -- records of a stream per case, at most
local FIXTURES = {
  "keepalive_nginx", "http10_nginx", "python_file_server", "python_file_server-2", "post_body",
  "post_expect_continue", "post_chunked", "chunked_python", "chunked_nginx_gzip", "head_then_get",
  "not_modified", "pipelined_raw", "pipelined_wrk", "keepalive_wrk", "large_nginx", "until_close",
  "connect_tunnel", "malformed_nginx",
}

-- xorshift32: the same numbers on every machine and LuaJIT build.
local state32 = SEED
local function rand(n)
  local x = state32
  x = bit.bxor(x, bit.lshift(x, 13))
  x = bit.bxor(x, bit.rshift(x, 17))
  x = bit.bxor(x, bit.lshift(x, 5))
  state32 = x
  return (x % 4294967296) % n
end

-- Records as { is_request, data, total }: data holds at most COPY_CAP + 64
-- bytes (only what can be copied matters), total the record's real size.
local streams = {}
for _, name in ipairs(FIXTURES) do
  local list = {}
  for _, r in ipairs(capture.load(name)) do
    list[#list + 1] = { r.is_request, r.data:sub(1, COPY_CAP + 64), #r.data }
  end
  streams[#streams + 1] = list
end

local function random_record()
  local s = streams[rand(#streams) + 1]
  return s[rand(#s) + 1]
end

local function mutate(data)
  local len = #data
  local kind = rand(8)
  if len == 0 or kind == 0 then
    return data
  end
  local at = rand(len) + 1
  if kind == 1 or kind == 2 then
    for _ = 1, rand(4) + 1 do
      local pos = rand(len) + 1
      data = data:sub(1, pos - 1) .. string.char(bit.bxor(data:byte(pos), bit.lshift(1, rand(8)))) .. data:sub(pos + 1)
    end
    return data
  elseif kind == 3 then
    return data:sub(1, at - 1) .. string.char(rand(256)) .. data:sub(at)
  elseif kind == 4 then
    return data:sub(1, at - 1) .. data:sub(at + rand(8) + 1)
  elseif kind == 5 then
    local other = random_record()[2]
    local from = rand(#other + 1) + 1
    return data:sub(1, at - 1) .. other:sub(from, from + rand(200))
  elseif kind == 6 then
    local chars = { "\r\n", "\n", "\r\n\r\n", ":", " ", "0\r\n\r\n", "HTTP/1.1 200 ", "GET / HTTP/1.1\r\n", "ffffffff" }
    return data:sub(1, at - 1) .. chars[rand(#chars) + 1] .. data:sub(at)
  end
  return data:sub(1, at)
end

-- A case: a window of one stream, mutated and re-chunked, as a list of
-- { is_request, data, total } plus event markers { event = "gap" | "idle" }.
local function make_case()
  local s = streams[rand(#streams) + 1]
  local first = rand(#s) + 1
  local out = {}
  for k = first, math.min(#s, first + rand(WINDOW)) do
    local r = s[k]
    local data, total = r[2], r[3]
    if rand(3) == 0 then
      data = mutate(data)
      total = math.max(total - #r[2] + #data, #data)
    end
    if rand(4) == 0 and #data > 1 then
      local cut = rand(#data - 1) + 1
      out[#out + 1] = { r[1], data:sub(1, cut), cut }
      data, total = data:sub(cut + 1), total - cut
    end
    out[#out + 1] = { r[1], data, total }
    if rand(40) == 0 then
      out[#out + 1] = { event = rand(2) == 0 and "gap" or "idle", is_request = rand(2) == 0 }
    end
  end
  return out
end

local METHODS = { GET = true, POST = true, PUT = true, DELETE = true, HEAD = true, OPTIONS = true, PATCH = true,
  CONNECT = true, TRACE = true }
local ERRORS = { ["no response"] = true, ["closed mid-response"] = true, ["lost sync"] = true }
local TRACE_HEADERS = { sw8 = true, traceparent = true, b3 = true, ["x-b3-traceid"] = true }
local FIELDS = {
  protocol = "string", method = "string", target = "string", version = "string", status = "number",
  host = "string", request_start_ns = "number", request_end_ns = "number", response_start_ns = "number",
  response_end_ns = "number", request_bytes = "number", response_bytes = "number", trace_id = "string",
  trace_header = "string", trace_value = "string", error = "string", pid = "number", conn = "number",
}

local function count(n)
  return type(n) == "number" and n >= 0 and n == math.floor(n)
end

-- Why ex is not a well-formed exchange, or nil. Fields not known are false
-- (net/exchange.lua creates every field), and read here as absent.
local function malformed(emitted)
  if type(emitted) ~= "table" then
    return "not a table"
  end
  local ex = {}
  for k, v in pairs(emitted) do
    if v ~= false then
      ex[k] = v
    end
  end
  for k, v in pairs(ex) do
    if FIELDS[k] ~= type(v) then
      return "field " .. tostring(k) .. " is a " .. type(v)
    end
  end
  if ex.protocol ~= "http" then
    return "protocol " .. tostring(ex.protocol)
  end
  if not count(ex.status) or ex.status > 999 then
    return "status " .. tostring(ex.status)
  end
  if ex.method and not METHODS[ex.method] then
    return "method " .. ex.method
  end
  if ex.target and #ex.target > 1024 then
    return "target of " .. #ex.target .. " characters"
  end
  if ex.host and #ex.host > 256 then
    return "host of " .. #ex.host .. " bytes"
  end
  if ex.version and not ex.version:find("^1%.%d$") then
    return "version " .. ex.version
  end
  if ex.error and not ERRORS[ex.error] then
    return "error " .. ex.error
  end
  if ex.trace_header and not TRACE_HEADERS[ex.trace_header] or (ex.trace_header == nil) ~= (ex.trace_id == nil)
    or (ex.trace_value == nil) ~= (ex.trace_id == nil) then
    return "trace header " .. tostring(ex.trace_header)
  end
  for _, side in ipairs({ "request", "response" }) do
    local s, e, b = ex[side .. "_start_ns"], ex[side .. "_end_ns"], ex[side .. "_bytes"]
    if (s == nil) ~= (e == nil) or (s == nil) ~= (b == nil) then
      return side .. " fields partly set"
    end
    if s and (e < s or not count(b)) then
      return side .. " times " .. s .. ".." .. e .. ", bytes " .. b
    end
  end
  return nil
end

describe("http1 fuzz", function()
  it("runs on memory where a read past the end faults", function()
    local script = [[
      local rt = require("moonrover.rt").with_test_api()
      local b = assert(rt.call(rt.lib.mr_guarded_buffer_new, 100))
      local data, n = rt.lib.mr_guarded_buffer_data(b), tonumber(rt.lib.mr_guarded_buffer_capacity(b))
      data[0], data[n - 1] = 1, 2
      io.write("in bounds ", n, " ", data[0] + data[n - 1], "\n")
      io.flush()
      io.write("past the end ", data[n], "\n")
    ]]
    local fh = assert(io.popen("luajit -e 'package.path = \"lua/?.lua;\" .. package.path' -e '" .. script
      .. "' 2>/dev/null; echo exit $?"))
    local out = fh:read("*a")
    fh:close()
    assert.matches("^in bounds %d+ 3\nexit 139\n$", out)
  end)

  it("takes two million mutated records, skips asked for, without raising, reading outside them or emitting junk",
    function()
    local guard = assert(rt.call(lib.mr_guarded_buffer_new, COPY_CAP + 4096))
    guard = ffi.gc(guard, lib.mr_guarded_buffer_free)
    local base = lib.mr_guarded_buffer_data(guard)
    local capacity = tonumber(lib.mr_guarded_buffer_capacity(guard))
    local failures = {}
    local calls, cases, exchanges, skips = 0, 0, 0, 0
    local case_id
    local function fail(what)
      if #failures < 5 then
        failures[#failures + 1] = "case " .. case_id .. ": " .. what
      end
    end
    local function emit(ex)
      exchanges = exchanges + 1
      local why = malformed(ex)
      if why then
        fail("malformed exchange: " .. why)
      end
    end
    -- One on_data call, its return checked; the skip it asks for is kept
    -- (per direction, in skip_left) when the case honours skips.
    local skip_left, honour = {}, false
    local function data(state, is_request, ptr, copied, total, ts)
      local ok, skip = pcall(http1.on_data, state, is_request, ptr, copied, total, ts, emit)
      calls = calls + 1
      if not ok then
        fail("raised: " .. tostring(skip))
      elseif skip ~= nil and not count(skip) then
        fail("on_data gave " .. tostring(skip))
      elseif honour then
        skip_left[is_request] = skip or 0
      end
    end
    while calls < RECORDS do
      cases = cases + 1
      case_id = cases
      local state = http1.new_state()
      local ts = 1000
      skip_left[true], skip_left[false], honour = 0, 0, rand(2) == 0
      for _, r in ipairs(make_case()) do
        ts = ts + rand(1000000)
        local ok, err
        if r.event == "gap" then
          ok, err = pcall(http1.on_gap, state, r.is_request)
        elseif r.event == "idle" then
          ok, err = pcall(http1.on_idle, state, ts, 200000000, emit)
        else
          local bytes, total = r[2], math.max(r[3], #r[2])
          local skipped = math.min(skip_left[r[1]], total)
          if skipped > 0 then
            skip_left[r[1]] = skip_left[r[1]] - skipped
            data(state, r[1], nil, 0, skipped, ts)
            skips = skips + 1
            bytes, total = bytes:sub(skipped + 1), total - skipped
          end
          local copied = #bytes
          if copied > COPY_CAP then
            copied = COPY_CAP
          end
          if rand(5) == 0 then
            copied = rand(copied + 1)
          end
          local ptr = rand(8) == 0 and base or base + (capacity - copied)
          ffi.copy(ptr, bytes, copied)
          local seen
          ok, seen = pcall(http1.detect, ptr, copied, r[1])
          if not ok or type(seen) ~= "boolean" then
            fail("detect gave " .. tostring(seen))
          end
          if total > 0 then
            data(state, r[1], ptr, copied, total, ts)
          end
        end
        if not ok then
          fail("raised: " .. tostring(err))
        end
      end
      if rand(2) == 0 then
        local ok, err = pcall(http1.on_close, state, ts + 1, emit)
        if not ok then
          fail("on_close raised: " .. tostring(err))
        end
      end
      if http1.at_rest(state) and (#state.pending > 0 or state.q_open or state.r_open or state.early) then
        fail("at rest with a message under way")
      end
      if #state.pending > 256 or (state.q.plen or 0) > 16384 or (state.r.plen or 0) > 16384 then
        fail("state over its bounds: " .. #state.pending .. " pending")
      end
      if cases % 1000 == 0 then
        local ok, err = pcall(serialize.encode, state)
        if not ok then
          fail("state not plain data: " .. tostring(err))
        end
      end
    end
    assert.same({}, failures)
    assert.is_true(exchanges > cases / 2, "so few exchanges: the inputs are no longer like HTTP")
    assert.is_true(skips > RECORDS / 100, skips .. " skipped pieces: the skips asked for are not exercised")
  end)
end)
