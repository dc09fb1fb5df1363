-- http_limits_spec.lua - the HTTP endpoint under pressure (runtime/http_server/
-- http_listener.c, http_conn.c): a cap on open connections that closes the
-- slowest sender, a deadline for the whole request that a trickling client cannot
-- push back, and a pause (logged once) when accept() runs out of
-- descriptors. The spec drives a libevent base itself through the FFI; the
-- clients are /usr/bin/python3 processes (spec/support/slowloris.py).
local rt = require("moonrover.rt").with_test_api()
local files = require("support.files")
local shell = require("support.shell")
local slowloris_client = require("support.slowloris")
local ffi, lib = rt.ffi, rt.lib

ffi.cdef([[
struct event_base *event_base_new(void);
int event_base_loop(struct event_base *base, int flags);
void event_base_free(struct event_base *base);
struct rlimit { unsigned long rlim_cur, rlim_max; };
int getrlimit(int resource, struct rlimit *rlim);
int setrlimit(int resource, const struct rlimit *rlim);
int fcntl(int fd, int cmd, ...);
int close(int fd);
]])
local EVLOOP_NONBLOCK = 0x02
local RLIMIT_NOFILE, F_DUPFD_CLOEXEC = 7, 1030
local PAUSE_NS = 100e6 -- how long accepting pauses after a failure (http_listener.c)
local MAX_TURNS = 30000 -- loop turns (1 ms pauses) to wait for something to happen

local function load_libevent()
  local ok, ev = pcall(ffi.load, "event")
  if ok then
    return ev
  end
  return ffi.load("libevent-2.1.so.7")
end
local event = load_libevent()

local SLOWLORIS = slowloris_client.SCRIPT
local client_status = slowloris_client.status

-- Waits for the file go, then asks for /healthz and writes the answer to out
-- (renamed into place when complete).
local GET_CLIENT = [[
import os, socket, sys, time
port, go, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.01)
got = b""
try:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: spec\r\nConnection: close\r\n\r\n")
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
except OSError as e:
    got += ("\nclient error: %s" % e).encode()
with open(out + ".part", "wb") as f:
    f.write(got)
os.rename(out + ".part", out)
]]

local function q(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

describe("HTTP endpoint limits", function()
  local dir, base, m, h, pids

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-http.XXXXXX"):gsub("%s+$", "")
    base = assert(event.event_base_new())
    m = assert(rt.call(lib.mr_metrics_new))
    pids = {}
    files.write(dir .. "/get.py", GET_CLIENT)
  end)

  after_each(function()
    for _, pid in ipairs(pids) do
      os.execute("kill " .. pid .. " 2>/dev/null")
    end
    if h then
      lib.mr_http_close(h)
      h = nil
    end
    lib.mr_metrics_free(m)
    event.event_base_free(base)
    shell.must("rm -rf " .. q(dir))
  end)

  local function open(max_connections, timeout_ms)
    local o = ffi.new("struct mr_http_opts", { max_connections = max_connections, timeout_ms = timeout_ms })
    h = assert(rt.call(lib.mr_http_open, base, "127.0.0.1:0", m, o))
    return lib.mr_http_port(h)
  end

  local function stats()
    local s = ffi.new("struct mr_http_stats")
    lib.mr_http_stats(h, s)
    return s
  end

  local function background(cmd)
    local p = io.popen(cmd .. " >/dev/null 2>&1 & echo $!")
    pids[#pids + 1] = tonumber(p:read("*l"))
    p:close()
  end

  local function slowloris(port, count, extra)
    local status = dir .. "/slowloris.status"
    background(string.format("/usr/bin/python3 %s 127.0.0.1 %d %d --status %s --duration 120 %s", q(SLOWLORIS), port,
      count, q(status), extra or ""))
    return status
  end

  -- Runs the loop until fn() returns a true value; returns it (nil past MAX_TURNS).
  local function loop_until(fn)
    for _ = 1, MAX_TURNS do
      event.event_base_loop(base, EVLOOP_NONBLOCK)
      local v = fn()
      if v then
        return v
      end
      lib.mr_sys_sleep_ms(1)
    end
    return nil
  end

  local function get_healthz(port, go)
    local out = dir .. "/healthz.out"
    background(string.format("/usr/bin/python3 %s %d %s %s", q(dir .. "/get.py"), port, q(go or dir .. "/get.py"),
      q(out)))
    return out
  end

  it("keeps at most max_connections open, closing the oldest slow one first, and still answers", function()
    local port = open(4, 60000)
    local status = slowloris(port, 10, "--interval 0.2")
    assert.is_truthy(loop_until(function() return stats().accepted == 10 end),
      "accepted " .. tonumber(stats().accepted))
    assert.equal(4, stats().open)
    assert.equal(6, tonumber(stats().evicted))
    local seen = loop_until(function()
      local st = client_status(status)
      return st.closed == 6 and st
    end)
    assert.is_truthy(seen, "the client should see 6 connections closed: " .. (files.read(status) or "no status"))
    assert.equal(0, seen.first_closed)
    local out = get_healthz(port)
    local answer = loop_until(function() return files.read(out) end)
    assert.matches("^HTTP/1.1 200 OK\r\n", answer)
    assert.equal(7, tonumber(stats().evicted))
    assert.is_true(stats().open <= 4)
    local text = ffi.string(lib.mr_metrics_render(m, nil))
    assert.matches('\nmoonrover_http_connections_closed_total{reason="evicted"} 7\n', text, 1, true)
  end)

  it("hands over a connection only once its client sent something: silent ones take no place", function()
    local port = open(2, 60000)
    local silent = slowloris(port, 5, "--silent")
    assert.is_truthy(loop_until(function() return (client_status(silent).opened or 0) == 5 end))
    for _ = 1, 10 do
      event.event_base_loop(base, EVLOOP_NONBLOCK)
    end
    assert.equal(0, tonumber(stats().accepted))
    local out = get_healthz(port)
    assert.matches("^HTTP/1.1 200 OK\r\n", loop_until(function() return files.read(out) end))
    assert.equal(0, tonumber(stats().evicted))
    assert.equal(0, client_status(silent).closed)
  end)

  it("closes the slowest sender first: the oldest request begun", function()
    local port = open(2, 60000)
    local slow = dir .. "/slow.status"
    background(string.format("/usr/bin/python3 %s 127.0.0.1 %d 2 --interval 0.2 --status %s --duration 120",
      q(SLOWLORIS), port, q(slow)))
    assert.is_truthy(loop_until(function() return stats().accepted == 2 and (client_status(slow).sent or 0) > 1 end))
    for _ = 1, 10 do -- the bytes are in the sockets already: a turn reads them
      event.event_base_loop(base, EVLOOP_NONBLOCK)
    end
    local out = get_healthz(port)
    assert.matches("^HTTP/1.1 200 OK\r\n", loop_until(function() return files.read(out) end))
    assert.is_truthy(loop_until(function() return client_status(slow).closed == 1 end))
    assert.equal(1, tonumber(stats().evicted))
  end)

  it("closes a request that trickles past its deadline, however often its bytes arrive", function()
    local port = open(8, 300)
    local status = slowloris(port, 1, "--interval 0.05")
    assert.is_truthy(loop_until(function() return stats().timed_out == 1 end),
      "the trickling request should run out of time: " .. (files.read(status) or "no status"))
    assert.is_truthy(loop_until(function() return client_status(status).closed == 1 end))
    assert.equal(0, stats().open)
  end)

  describe("out of file descriptors", function()
    local saved, dups

    -- Uses up every descriptor below a lowered limit; restore() gives them back.
    local function exhaust()
      saved = ffi.new("struct rlimit")
      assert.equal(0, ffi.C.getrlimit(RLIMIT_NOFILE, saved))
      local highest = 0
      for fd in shell.capture("ls /proc/self/fd"):gmatch("%d+") do
        highest = math.max(highest, tonumber(fd))
      end
      local low = ffi.new("struct rlimit", { rlim_cur = highest + 64, rlim_max = saved.rlim_max })
      assert.equal(0, ffi.C.setrlimit(RLIMIT_NOFILE, low))
      dups = {}
      while true do
        local fd = ffi.C.fcntl(0, F_DUPFD_CLOEXEC, ffi.new("int", 0))
        if fd < 0 then
          break
        end
        dups[#dups + 1] = fd
      end
    end

    local function restore()
      for _, fd in ipairs(dups or {}) do
        ffi.C.close(fd)
      end
      dups = nil
      if saved then
        assert.equal(0, ffi.C.setrlimit(RLIMIT_NOFILE, saved))
        saved = nil
      end
    end

    after_each(restore)

    it("pauses accepting, logs once, and answers once descriptors are back", function()
      local port = open(64, 60000)
      local go = dir .. "/go"
      files.write(go .. ".pending", "")
      local out = get_healthz(port, go)
      exhaust()
      assert(os.rename(go .. ".pending", go))
      assert.is_truthy(loop_until(function() return stats().accept_errors >= 1 end))
      local first = lib.mr_sys_monotonic_ns()
      loop_until(function() return lib.mr_sys_monotonic_ns() - first > 5 * PAUSE_NS end)
      local failures, elapsed = tonumber(stats().accept_errors), tonumber(lib.mr_sys_monotonic_ns() - first)
      restore()
      assert.is_true(failures <= 1 + math.floor(elapsed / PAUSE_NS),
        failures .. " accept failures in " .. elapsed / 1e6 .. " ms: accepting should pause after each")
      assert.equal(1, tonumber(stats().log_lines))
      local answer = loop_until(function() return files.read(out) end)
      assert.matches("^HTTP/1.1 200 OK\r\n", answer)
    end)

    it("closes a connection to free a descriptor for a new request", function()
      local port = open(64, 60000)
      local status = slowloris(port, 1, "--interval 0.2")
      assert.is_truthy(loop_until(function() return stats().open == 1 end))
      local go = dir .. "/go"
      files.write(go .. ".pending", "")
      local out = get_healthz(port, go)
      exhaust()
      assert(os.rename(go .. ".pending", go))
      assert.is_truthy(loop_until(function() return stats().accepted == 2 and stats().open == 0 end),
        "the request should get the slow connection's descriptor")
      restore()
      assert.equal(1, tonumber(stats().evicted))
      assert.equal(1, tonumber(stats().log_lines))
      assert.matches("^HTTP/1.1 200 OK\r\n", loop_until(function() return files.read(out) end))
      assert.is_truthy(loop_until(function() return client_status(status).closed == 1 end))
    end)
  end)
end)
