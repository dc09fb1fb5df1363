-- Specs for moonrover.net.http_series: exchanges of the agent's "http" stream
-- (shaped as the tracer hands them on) counted per process and second, by
-- path, with its bounds and what it leaves out.
local http_series = require("moonrover.net.http_series")

local SECOND = 1e9

-- An exchange as the "http" stream delivers it: every field the tracer fills in.
local function exchange(fields)
  local ex = {
    protocol = "http", method = "GET", target = "/", version = "1.1", status = 200, host = "localhost",
    request_start_ns = 100 * SECOND, request_end_ns = 100 * SECOND + 1000,
    response_start_ns = 100 * SECOND + 2e6, response_end_ns = 100 * SECOND + 4e6,
    request_bytes = 80, response_bytes = 120, trace_id = false, trace_header = false, error = false,
    pid = 42, comm = "python3", role = "server", conn = 7, tls = false, ["local"] = "127.0.0.1:8080",
    remote = "127.0.0.1:50000", container_id = "/", duration_ns = 4e6,
  }
  for k, v in pairs(fields or {}) do
    ex[k] = v
  end
  return ex
end

local function batch(list)
  return { events = list }
end

describe("http_series", function()
  it("counts requests, errors and latency per process and second", function()
    local s = assert(http_series.new())
    s:feed(batch({
      exchange({ status = 200, duration_ns = 2e6 }),
      exchange({ status = 500, duration_ns = 6e6 }),
      exchange({ status = 503, duration_ns = 4e6, response_end_ns = 101 * SECOND + 5 }),
      exchange({ pid = 43, status = 404 }),
    }))
    assert.same({ second = 100, count = 2, errors = 1, latency_ms = 8 }, s:slot(42, 100))
    assert.same({ second = 101, count = 1, errors = 1, latency_ms = 4 }, s:slot(42, 101))
    assert.same(0, s:slot(43, 100).errors)
    assert.is_nil(s:slot(42, 102))
    assert.is_nil(s:slot(44, 100))
    local pids = s:pids()
    table.sort(pids)
    assert.same({ 42, 43 }, pids)
  end)

  it("keeps each path's counts apart, without the query string", function()
    local s = assert(http_series.new())
    s:feed(batch({
      exchange({ target = "/pay?id=1", status = 500 }),
      exchange({ target = "/pay?id=2" }),
      exchange({ target = "/cart" }),
    }))
    assert.same(2, s:slot(42, 100, "/pay").count)
    assert.same(1, s:slot(42, 100, "/pay").errors)
    assert.same(1, s:slot(42, 100, "/cart").count)
    assert.same(3, s:slot(42, 100).count)
    local paths = s:paths(42)
    table.sort(paths)
    assert.same({ "/cart", "/pay" }, paths)
  end)

  it("ignores client exchanges and exchanges without a response", function()
    local s = assert(http_series.new())
    s:feed(batch({
      exchange({ role = "client" }),
      exchange({ status = 0, error = "no response", response_end_ns = false, duration_ns = false }),
      exchange({ pid = 0 }),
    }))
    assert.is_nil(s:slot(42, 100))
    assert.same(3, s:stats().ignored)
  end)

  it("reuses a slot once its second is older than the series", function()
    local s = assert(http_series.new({ seconds = 5 }))
    s:add(exchange({ status = 500 }))
    s:add(exchange({ response_end_ns = 105 * SECOND }))
    assert.is_nil(s:slot(42, 100))
    assert.same({ second = 105, count = 1, errors = 0, latency_ms = 4 }, s:slot(42, 105))
  end)

  it("evicts the process heard from least recently, and counts it", function()
    local s = assert(http_series.new({ max_pids = 2 }))
    s:add(exchange({ pid = 1, response_end_ns = 100 * SECOND }))
    s:add(exchange({ pid = 2, response_end_ns = 102 * SECOND }))
    s:add(exchange({ pid = 1, response_end_ns = 103 * SECOND }))
    s:add(exchange({ pid = 3, response_end_ns = 104 * SECOND }))
    assert.is_nil(s:slot(2, 102))
    assert.is_not_nil(s:slot(1, 103))
    assert.is_not_nil(s:slot(3, 104))
    assert.same({ pids = 2, evicted = 1, paths_dropped = 0, ignored = 0 }, s:stats())
  end)

  it("counts further paths in the totals only once a process has max_paths", function()
    local s = assert(http_series.new({ max_paths = 1 }))
    s:add(exchange({ target = "/a" }))
    s:add(exchange({ target = "/b" }))
    assert.same(2, s:slot(42, 100).count)
    assert.is_nil(s:slot(42, 100, "/b"))
    assert.same(1, s:stats().paths_dropped)
  end)

  it("makes room for a new path once an old one has left the window", function()
    local s = assert(http_series.new({ max_paths = 1, seconds = 5 }))
    s:add(exchange({ target = "/user/1" }))
    local later = 106 * SECOND
    s:add(exchange({ target = "/checkout", response_end_ns = later }))
    assert.same(1, s:slot(42, 106, "/checkout").count)
    assert.is_nil(s:slot(42, 100, "/user/1"))
    assert.same(0, s:stats().paths_dropped)
  end)

  it("forgets a process", function()
    local s = assert(http_series.new())
    s:add(exchange())
    s:forget(42)
    assert.is_nil(s:slot(42, 100))
    assert.same(0, s:stats().pids)
  end)

  it("refuses bounds that are not positive integers", function()
    assert.same("http_series.new: seconds must be a positive integer, not 0",
      select(2, http_series.new({ seconds = 0 })))
    assert.matches("max_pids", select(2, http_series.new({ max_pids = 1.5 })))
  end)
end)
