-- trace_json_spec.lua - the JSON line of an exchange written into bytes:
-- the same text as json_text makes of the same fields (the contract's keys
-- in order, absent ones left out), for random exchanges with strings of any
-- bytes; always valid UTF-8.
local ffi = require("ffi")
local json_text = require("moonrover.lib.json_text")
local trace_json = require("moonrover.net.trace_json")
local trace_utf8 = require("moonrover.net.trace_utf8")

local KEYS = { "ts", "pid", "tid", "comm", "container_id", "role", "local", "remote", "protocol", "method", "target",
  "host", "status", "duration_ms", "request_bytes", "response_bytes", "tls", "trace_id", "error" }

-- The line as json_text writes it from a table of the fields.
local function expected(ex, second, us)
  local function utf8(s)
    return s and trace_utf8.valid(s)
  end
  return json_text.object(KEYS, { ts = second .. string.format(".%06dZ", us), pid = ex.pid, tid = ex.tid,
    comm = utf8(ex.comm), container_id = utf8(ex.container_id), role = ex.role, ["local"] = ex["local"],
    remote = ex.remote, protocol = ex.protocol, method = utf8(ex.method), target = utf8(ex.target),
    host = utf8(ex.host), status = ex.status or 0, duration_ms = ex.duration_ns and ex.duration_ns / 1e6,
    request_bytes = ex.request_bytes, response_bytes = ex.response_bytes, tls = ex.tls, trace_id = utf8(ex.trace_id),
    error = ex.error }) .. "\n"
end

local function written(w, ex, second, us)
  local bound = trace_json.bound(ex)
  local buf = ffi.new("uint8_t[?]", bound)
  local stop = trace_json.write(w, buf, 0, ex, second, us)
  assert.is_true(stop <= bound)
  return ffi.string(buf, stop)
end

local function bytes(n, wild)
  local b = {}
  for k = 1, n do
    b[k] = string.char(wild and math.random(0, 255) or math.random(32, 126))
  end
  return table.concat(b)
end

describe("trace_json", function()
  it("writes the fields as json_text does, for 20000 random exchanges", function()
    math.randomseed(2021)
    local w = trace_json.new()
    for _ = 1, 20000 do
      local wild = math.random() < 0.3
      local ex = { pid = math.random(1, 4194304), tid = math.random(1, 4194304), comm = bytes(math.random(1, 15), wild),
        role = math.random() < 0.5 and "server" or "client", ["local"] = "127.0.0.1:8080", remote = "[::1]:40000",
        protocol = "http", status = math.random(0, 599), tls = false }
      if math.random() < 0.8 then
        ex.method, ex.target = "GET", bytes(math.random(0, 1024), wild)
        ex.request_bytes = math.random(0, 2 ^ 40)
        ex.duration_ns = math.random() < 0.5 and math.random(0, 999999) or math.random(0, 2 ^ 45)
      end
      ex.host = math.random() < 0.5 and bytes(math.random(0, 256), wild) or nil
      ex.container_id = math.random() < 0.5 and "/system.slice/" .. bytes(math.random(0, 40), wild) or nil
      ex.response_bytes = math.random() < 0.9 and math.random(0, 2 ^ 40) or nil
      ex.trace_id = math.random() < 0.2 and bytes(32, wild) or nil
      ex.error = math.random() < 0.1 and "lost sync" or nil
      local us = math.random(0, 999999)
      local line = written(w, ex, "2026-12-04T21:00:00", us)
      assert.equal(expected(ex, "2026-12-04T21:00:00", us), line)
      assert.equal(line, trace_utf8.valid(line))
    end
  end)

  it("writes milliseconds exactly from whole nanoseconds", function()
    local w = trace_json.new()
    local cases = { [0] = "0", [1] = "0.000001", [2500000] = "2.5", [1000000] = "1", [10] = "0.00001",
      [123456789012] = "123456.789012" }
    for ns, ms in pairs(cases) do
      assert.matches('"duration_ms":' .. ms:gsub("%.", "%%.") .. '}', written(w, { duration_ns = ns, status = 200 },
        "2026-12-04T21:00:00", 0))
    end
  end)
end)
