-- http1_parse.lua - the HTTP/1 parser's cost per exchange: a typical
-- keep-alive GET (curl's request) and its small 200 response (nginx's head
-- and a 615-byte page), each one record, fed through on_data again and again
-- on one connection; then a chunked response in four records, and a 1 MiB
-- response in 4096-byte copies. Reports ns of Lua per exchange (CPU time,
-- best of ROUNDS), emit included (it counts).
--   usage (from the repo root, the parser calls the runtime library):
--   MOONROVER_LIB=build/libmoonrover.so luajit scripts/bench/http1_parse.lua [EXCHANGES] [ROUNDS]
-- The bundled Lua, then the build's generated modules (moonrover.consts).
package.path = "lua/?.lua;" .. (os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua") .. "/?.lua;" ..
  package.path
local ffi = require("ffi")
local http1 = require("moonrover.net.protocols.http1")

local EXCHANGES = tonumber(arg[1]) or 2000000
local ROUNDS = tonumber(arg[2]) or 5
local COPY_CAP = 4096

local REQUEST = "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"
local RESPONSE = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 10:00:00 GMT\r\n"
  .. "Content-Type: text/html\r\nContent-Length: 615\r\nLast-Modified: Mon, 30 Nov 2026 09:00:00 GMT\r\n"
  .. "Connection: keep-alive\r\nETag: \"6566e4e0-267\"\r\nAccept-Ranges: bytes\r\n\r\n" .. ("x"):rep(615)
local CHUNKED = {
  "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    .. "Connection: keep-alive\r\n\r\n",
  "100\r\n" .. ("y"):rep(256) .. "\r\n",
  "100\r\n" .. ("z"):rep(256) .. "\r\n",
  "0\r\n\r\n",
}
local LARGE_HEAD = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: application/octet-stream\r\n"
  .. "Content-Length: 1048576\r\nConnection: keep-alive\r\n\r\n"
local LARGE_RECORD = 65536

local function buffer(s)
  local b = ffi.new("uint8_t[?]", #s)
  ffi.copy(b, s, #s)
  return b, #s
end

local function cpu_ns()
  return os.clock() * 1e9
end

-- Runs n exchanges of `one` (a function of state, ts, emit) and returns ns per exchange.
local function measure(n, one)
  local state = http1.new_state()
  local emitted = 0
  local function emit()
    emitted = emitted + 1
  end
  local t0 = cpu_ns()
  for k = 1, n do
    one(state, k, emit)
  end
  local ns = (cpu_ns() - t0) / n
  assert(emitted == n, "exchanges emitted: " .. emitted .. " of " .. n)
  return ns
end

local req, req_len = buffer(REQUEST)
local resp, resp_len = buffer(RESPONSE)
local function get_200(state, k, emit)
  http1.on_data(state, true, req, req_len, req_len, k, emit)
  http1.on_data(state, false, resp, resp_len, resp_len, k + 1, emit)
end

local chunks = {}
for i, s in ipairs(CHUNKED) do
  local b, len = buffer(s)
  chunks[i] = { b = b, len = len }
end
local function get_chunked(state, k, emit)
  http1.on_data(state, true, req, req_len, req_len, k, emit)
  for i = 1, #chunks do
    local c = chunks[i]
    http1.on_data(state, false, c.b, c.len, c.len, k + i, emit)
  end
end

local large_head, large_head_len = buffer(LARGE_HEAD)
local body = buffer(("b"):rep(COPY_CAP))
local function get_large(state, k, emit)
  http1.on_data(state, true, req, req_len, req_len, k, emit)
  http1.on_data(state, false, large_head, large_head_len, large_head_len, k, emit)
  for i = 1, 1048576 / LARGE_RECORD do
    http1.on_data(state, false, body, COPY_CAP, LARGE_RECORD, k + i, emit)
  end
end

local function best(n, one)
  local b = math.huge
  for _ = 1, ROUNDS do
    b = math.min(b, measure(n, one))
  end
  return b
end

local function report(case, n, one)
  print(string.format("%-58s %10.0f", case, best(math.floor(n), one)))
end
print(string.format("%-58s %10s", "case", "ns/exchange"))
report("keep-alive GET + 200 (615 B), one record each", EXCHANGES, get_200)
report("GET + chunked 200 in 4 records", EXCHANGES / 4, get_chunked)
report("GET + 1 MiB 200 in 16 records of 64 KiB (4 KiB copied)", EXCHANGES / 8, get_large)
