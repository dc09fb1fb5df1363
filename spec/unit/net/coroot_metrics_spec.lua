-- Specs for net/coroot_metrics.lua: synthetic connection events and exchanges
-- in, the exact Prometheus exposition of a recording registry out.
local coroot_metrics = require("moonrover.net.coroot_metrics")
local recorder = require("support.metrics_recorder")

local CID = "/system.slice/api.service"
local DST = "10.0.0.2:80"
local LOCAL = "10.0.0.1:40000"

-- A field value that removes the default.
local NONE = {}

local function override(e, fields)
  for k, v in pairs(fields or {}) do
    if v == NONE then
      e[k] = nil
    else
      e[k] = v
    end
  end
  return e
end

local function setup(opts)
  local reg = recorder.new()
  local m = assert(coroot_metrics.new(reg, opts))
  return m, reg
end

-- A connection event: kind, then fields over the defaults of an outbound one.
local function ev(kind, fields)
  local e = { kind = kind, ts = 1e9, pid = 100, comm = "api", container_id = CID, role = "client",
    local_addr = LOCAL, remote_addr = DST }
  return override(e, fields)
end

local function exchange(fields)
  local e = { protocol = "http", method = "GET", target = "/", version = "1.1", status = 200,
    request_start_ns = 1e9, request_end_ns = 1e9, response_start_ns = 1e9 + 2e6, response_end_ns = 1e9 + 3e6,
    pid = 100, comm = "api", role = "client", ["local"] = LOCAL, remote = DST, conn = 7, container_id = CID }
  return override(e, fields)
end

local DL = 'actual_destination="10.0.0.2:80",container_id="/system.slice/api.service",destination="10.0.0.2:80"'

local function value(reg, name, labels)
  return reg:value(name, labels)
end

local function dst_labels(dst)
  return { container_id = CID, destination = dst or DST, actual_destination = dst or DST }
end

describe("coroot_metrics connections", function()
  it("counts a connect: connects, connection time, zero bytes, one active connection", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect", { connect_ns = 1500000 }))
    assert.same({ "container_net_tcp_successful_connects_total{" .. DL .. "} 1" },
      reg:lines("container_net_tcp_successful_connects_total"))
    assert.same({ "container_net_tcp_connection_time_seconds_total{" .. DL .. "} 0.0015" },
      reg:lines("container_net_tcp_connection_time_seconds_total"))
    assert.same({ "container_net_tcp_bytes_sent_total{" .. DL .. "} 0" },
      reg:lines("container_net_tcp_bytes_sent_total"))
    assert.same({ "container_net_tcp_bytes_received_total{" .. DL .. "} 0" },
      reg:lines("container_net_tcp_bytes_received_total"))
    assert.same({ "container_net_tcp_active_connections{" .. DL .. "} 1" },
      reg:lines("container_net_tcp_active_connections"))
  end)

  it("labels a pod's series with coroot's app_id where coroot has one", function()
    local m, reg = setup()
    local pod_cid = "/k8s/shop/cart-7d9f8b6c4-x2bzq/cart"
    m:on_conn_event(ev("connect", { connect_ns = 1000, container_id = pod_cid }))
    m:on_exchange(exchange({ container_id = "/k8s/ops/lone/c" }))
    assert.same({ 'container_net_tcp_successful_connects_total{actual_destination="10.0.0.2:80",'
      .. 'app_id="/k8s/shop/cart",container_id="' .. pod_cid .. '",destination="10.0.0.2:80"} 1' },
      reg:lines("container_net_tcp_successful_connects_total"))
    assert.same({ 'container_http_requests_total{actual_destination="10.0.0.2:80",container_id="/k8s/ops/lone/c",'
      .. 'destination="10.0.0.2:80",status="2xx"} 1' }, reg:lines("container_http_requests_total"))
  end)

  it("gives the exact types and help lines", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect", { connect_ns = 1000 }))
    local text = reg:render()
    assert.truthy(text:find("# TYPE container_net_tcp_successful_connects_total counter\n", 1, true))
    assert.truthy(text:find("# TYPE container_net_tcp_active_connections gauge\n", 1, true))
    assert.truthy(text:find("# TYPE moonrover_net_metrics_series_dropped_total counter\n", 1, true))
    assert.truthy(text:find("# HELP container_net_tcp_active_connections Outbound TCP connections open, by "
      .. "destination\n", 1, true))
  end)

  it("adds only what a connection's byte totals grew by; a close after progress adds the rest", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect"))
    m:on_conn_event(ev("progress", { bytes_sent = 100, bytes_received = 50 }))
    assert.equal(100, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    m:on_conn_event(ev("progress", { bytes_sent = 300, bytes_received = 50 }))
    m:on_conn_event(ev("progress", { bytes_sent = 250, bytes_received = 40 })) -- late, smaller: nothing
    assert.equal(300, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(50, value(reg, "container_net_tcp_bytes_received_total", dst_labels()))
    m:on_conn_event(ev("close", { bytes_sent = 350, bytes_received = 4000 }))
    assert.equal(350, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(4000, value(reg, "container_net_tcp_bytes_received_total", dst_labels()))
    m:on_conn_event(ev("progress", { role = "server", bytes_sent = 999, bytes_received = 999 }))
    assert.equal(350, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
  end)

  it("sums the bytes of several connections to one destination", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect", { conn = 1 }))
    m:on_conn_event(ev("connect", { conn = 2, local_addr = "10.0.0.1:40001" }))
    m:on_conn_event(ev("progress", { conn = 1, bytes_sent = 10 }))
    m:on_conn_event(ev("progress", { conn = 2, local_addr = "10.0.0.1:40001", bytes_sent = 5 }))
    m:on_conn_event(ev("close", { conn = 1, bytes_sent = 12 }))
    m:on_conn_event(ev("close", { conn = 2, local_addr = "10.0.0.1:40001", bytes_sent = 5 }))
    assert.equal(17, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
  end)

  it("moves the active connections gauge up and down", function()
    local m, reg = setup()
    local function active()
      return value(reg, "container_net_tcp_active_connections", dst_labels())
    end
    m:on_conn_event(ev("connect", { local_addr = "10.0.0.1:40001" }))
    m:on_conn_event(ev("connect", { local_addr = "10.0.0.1:40002" }))
    assert.equal(2, active())
    m:on_conn_event(ev("close", { local_addr = "10.0.0.1:40001" }))
    assert.equal(1, active())
    m:on_conn_event(ev("close", { local_addr = "10.0.0.1:40001" })) -- twice: no effect
    assert.equal(1, active())
    m:on_conn_event(ev("close", { local_addr = "10.0.0.1:40002" }))
    assert.equal(0, active())
    assert.equal(2, value(reg, "container_net_tcp_successful_connects_total", dst_labels()))
  end)

  it("takes a connect on a connection already open for a new one", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect"))
    m:on_conn_event(ev("connect"))
    assert.equal(1, value(reg, "container_net_tcp_active_connections", dst_labels()))
    assert.equal(2, value(reg, "container_net_tcp_successful_connects_total", dst_labels()))
  end)

  it("counts failed connects by destination only", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect_failed"))
    m:on_conn_event(ev("connect_failed"))
    assert.same({ 'container_net_tcp_failed_connects_total{container_id="/system.slice/api.service",'
      .. 'destination="10.0.0.2:80"} 2' }, reg:lines("container_net_tcp_failed_connects_total"))
    assert.equal(0, m:stats().connections)
  end)

  it("counts retransmits of followed connections, matched by addresses without a pid", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect"))
    m:on_conn_event(ev("retransmit", { pid = 0, container_id = CID }))
    m:on_conn_event(ev("retransmit", { local_addr = "10.0.0.1:1", remote_addr = "10.0.0.3:80" }))
    assert.same({ "container_net_tcp_retransmits_total{" .. DL .. "} 1" },
      reg:lines("container_net_tcp_retransmits_total"))
  end)

  it("follows a client connection first seen in a progress event, from zero; ignores server ones", function()
    local m, reg = setup()
    m:on_conn_event(ev("progress", { bytes_sent = 70, bytes_received = 7 }))
    assert.equal(70, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(1, value(reg, "container_net_tcp_active_connections", dst_labels()))
    assert.is_nil(value(reg, "container_net_tcp_successful_connects_total", dst_labels()))
    m:on_conn_event(ev("close", { bytes_sent = 80, bytes_received = 7 }))
    assert.equal(80, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(0, value(reg, "container_net_tcp_active_connections", dst_labels()))
    m:on_conn_event(ev("progress", { role = "server", local_addr = "10.0.0.1:80", remote_addr = "10.0.0.9:5000",
      bytes_sent = 5 }))
    assert.equal(1, reg:count("container_net_tcp_bytes_sent_total"))
  end)

  it("counts a lone close of an unknown client connection without leaving it open", function()
    local m, reg = setup()
    m:on_conn_event(ev("close", { bytes_sent = 9, bytes_received = 3 }))
    assert.equal(9, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.is_nil(value(reg, "container_net_tcp_active_connections", dst_labels()))
    assert.equal(0, m:stats().connections)
  end)

  it("takes connections silent for stale_ns for closed, and resumes them without counting twice", function()
    local m, reg = setup({ stale_ns = 60e9 })
    m:on_conn_event(ev("connect", { ts = 1e9 }))
    m:on_conn_event(ev("progress", { ts = 2e9, bytes_sent = 500, bytes_received = 20 }))
    m:tick(30e9)
    assert.equal(1, value(reg, "container_net_tcp_active_connections", dst_labels()))
    m:tick(70e9)
    assert.equal(0, value(reg, "container_net_tcp_active_connections", dst_labels()))
    m:on_conn_event(ev("progress", { ts = 80e9, bytes_sent = 650, bytes_received = 20 }))
    assert.equal(650, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(1, value(reg, "container_net_tcp_active_connections", dst_labels()))
    assert.equal(1, value(reg, "container_net_tcp_successful_connects_total", dst_labels()))
  end)

  it("bounds the connections it follows and counts the rest", function()
    local m, reg = setup({ max_connections = 1 })
    m:on_conn_event(ev("connect", { local_addr = "10.0.0.1:40001" }))
    m:on_conn_event(ev("connect", { local_addr = "10.0.0.1:40002" }))
    assert.equal(1, m:stats().connections)
    assert.equal(1, value(reg, "moonrover_net_metrics_events_ignored_total", { reason = "too_many_connections" }))
  end)
end)

describe("coroot_metrics destinations", function()
  local function connects(m, dst)
    m:on_conn_event(ev("connect", { remote_addr = dst, local_addr = "10.0.0.1:1" .. dst:len() }))
  end

  it("skips ephemeral destination ports (but 50051), link-local and public addresses", function()
    local m, reg = setup()
    for _, dst in ipairs({ "10.0.0.2:32768", "10.0.0.2:60999", "169.254.169.254:80", "8.8.8.8:53", "[2001:db8::1]:443",
      "[fe80::1]:80", "[::ffff:8.8.4.4]:443" }) do
      connects(m, dst)
    end
    assert.equal(0, reg:count("container_net_tcp_successful_connects_total"))
    for _, dst in ipairs({ "10.0.0.2:32767", "10.0.0.2:61000", "10.0.0.2:50051", "127.0.0.1:6379", "172.16.0.1:80",
      "192.168.1.1:80", "100.64.0.1:80", "[::1]:80", "[fd00::1]:80", "[::ffff:10.1.1.1]:80" }) do
      connects(m, dst)
      assert.equal(1, value(reg, "container_net_tcp_successful_connects_total", dst_labels(dst)), dst)
    end
  end)

  it("measures public networks it is given and its own port range", function()
    local m, reg = setup({ public_networks = { "8.8.8.0/24", "2001:db8::/32" },
      ephemeral_ports = "1000-2000, 3000-3001" })
    for _, dst in ipairs({ "8.8.8.8:53", "[2001:db8::1]:443", "10.0.0.2:40000" }) do
      connects(m, dst)
      assert.equal(1, value(reg, "container_net_tcp_successful_connects_total", dst_labels(dst)), dst)
    end
    for _, dst in ipairs({ "8.8.4.4:53", "10.0.0.2:1500", "10.0.0.2:3001" }) do
      connects(m, dst)
      assert.is_nil(value(reg, "container_net_tcp_successful_connects_total", dst_labels(dst)), dst)
    end
  end)

  it("skips no port with an empty range", function()
    local m, reg = setup({ ephemeral_ports = "" })
    connects(m, "10.0.0.2:40000")
    assert.equal(1, value(reg, "container_net_tcp_successful_connects_total", dst_labels("10.0.0.2:40000")))
  end)

  it("refuses bad options with one line", function()
    local reg = recorder.new()
    local m, err = coroot_metrics.new(reg, { ephemeral_ports = "60999-32768" })
    assert.is_nil(m)
    assert.equal("invalid port range '60999-32768' (expected FROM-TO, such as 32768-60999)", err)
    m, err = coroot_metrics.new(reg, { public_networks = { "8.8.8.8" } })
    assert.is_nil(m)
    assert.equal("invalid network '8.8.8.8' (expected ip/bits, such as 203.0.113.0/24)", err)
  end)
end)

describe("coroot_metrics listening sockets", function()
  it("sets listen_info to 1 while a socket listens, 0 once the last listener closed", function()
    local m, reg = setup()
    local listen = { local_addr = "0.0.0.0:8080", remote_addr = NONE, role = "server" }
    m:on_conn_event(ev("listen", listen))
    m:on_conn_event(ev("listen", { local_addr = "0.0.0.0:8080", pid = 101, role = "server" }))
    local line = 'container_net_tcp_listen_info{container_id="/system.slice/api.service",listen_addr="0.0.0.0:8080",'
      .. 'proxy=""} '
    assert.same({ line .. "1" }, reg:lines("container_net_tcp_listen_info"))
    m:on_conn_event(ev("listen_close", listen))
    assert.same({ line .. "1" }, reg:lines("container_net_tcp_listen_info"))
    m:on_conn_event(ev("listen_close", { local_addr = "0.0.0.0:8080", pid = 101 }))
    assert.same({ line .. "0" }, reg:lines("container_net_tcp_listen_info"))
  end)

  it("skips listening sockets on ephemeral ports", function()
    local m, reg = setup()
    m:on_conn_event(ev("listen", { local_addr = "[::]:45000", remote_addr = NONE }))
    assert.same({}, reg:lines("container_net_tcp_listen_info"))
  end)
end)

describe("coroot_metrics HTTP", function()
  local HL = DL

  it("labels a status outside 100-599, or not a number, unknown, and a fractional one by its class", function()
    local m, reg = setup()
    for _, status in ipairs({ 99, 100, 599, 599.5, 600, -200, "200" }) do
      m:on_exchange(exchange({ status = status }))
    end
    assert.same({
      'container_http_requests_total{' .. HL .. ',status="1xx"} 1',
      'container_http_requests_total{' .. HL .. ',status="5xx"} 2',
      'container_http_requests_total{' .. HL .. ',status="unknown"} 4',
    }, reg:lines("container_http_requests_total"))
  end)

  it("counts client requests by status class and times them in Prometheus' default buckets", function()
    local m, reg = setup()
    m:on_exchange(exchange({ status = 200, response_start_ns = 1e9 + 3e6 }))
    m:on_exchange(exchange({ status = 404, response_start_ns = 1e9 + 70e6 }))
    m:on_exchange(exchange({ status = 503, response_start_ns = 1e9 + 2e9 }))
    m:on_exchange(exchange({ status = 204, response_start_ns = 1e9 + 20e9 }))
    m:on_exchange(exchange({ status = 0, error = "no response", response_start_ns = NONE, response_end_ns = NONE }))
    m:on_exchange(exchange({ status = 101, response_start_ns = 1e9 + 1e6 }))
    assert.same({
      'container_http_requests_total{' .. HL .. ',status="1xx"} 1',
      'container_http_requests_total{' .. HL .. ',status="2xx"} 2',
      'container_http_requests_total{' .. HL .. ',status="4xx"} 1',
      'container_http_requests_total{' .. HL .. ',status="5xx"} 1',
      'container_http_requests_total{' .. HL .. ',status="unknown"} 1',
    }, reg:lines("container_http_requests_total"))
    local name = "container_http_requests_duration_seconds_total"
    assert.same({
      name .. '_bucket{' .. HL .. ',le="0.005"} 2',
      name .. '_bucket{' .. HL .. ',le="0.01"} 2',
      name .. '_bucket{' .. HL .. ',le="0.025"} 2',
      name .. '_bucket{' .. HL .. ',le="0.05"} 2',
      name .. '_bucket{' .. HL .. ',le="0.1"} 3',
      name .. '_bucket{' .. HL .. ',le="0.25"} 3',
      name .. '_bucket{' .. HL .. ',le="0.5"} 3',
      name .. '_bucket{' .. HL .. ',le="1"} 3',
      name .. '_bucket{' .. HL .. ',le="2.5"} 4',
      name .. '_bucket{' .. HL .. ',le="5"} 4',
      name .. '_bucket{' .. HL .. ',le="10"} 4',
      name .. '_bucket{' .. HL .. ',le="+Inf"} 5',
      name .. '_sum{' .. HL .. '} 22.074',
      name .. '_count{' .. HL .. '} 5',
    }, reg:lines(name))
    assert.truthy(reg:render():find("# TYPE " .. name .. " histogram\n", 1, true))
  end)

  it("counts server requests without destination labels", function()
    local m, reg = setup()
    m:on_exchange(exchange({ role = "server", remote = "10.0.0.9:51000", status = 500, response_start_ns = 1e9 + 4e6 }))
    m:on_exchange(exchange({ role = "server", remote = "10.0.0.8:51001", status = 200, response_start_ns = 1e9 + 1e6 }))
    assert.same({
      'container_http_inbound_requests_total{container_id="/system.slice/api.service",status="2xx"} 1',
      'container_http_inbound_requests_total{container_id="/system.slice/api.service",status="5xx"} 1',
    }, reg:lines("container_http_inbound_requests_total"))
    local name = "container_http_inbound_requests_duration_seconds_total"
    local lines = reg:lines(name)
    assert.equal(name .. '_bucket{container_id="/system.slice/api.service",le="0.005"} 2', lines[1])
    assert.equal(name .. '_count{container_id="/system.slice/api.service"} 2', lines[#lines])
  end)

  it("skips exchanges with destinations coroot skips, and protocols it does not measure", function()
    local m, reg = setup()
    m:on_exchange(exchange({ remote = "10.0.0.2:40000" }))
    m:on_exchange(exchange({ remote = "93.184.216.34:80" }))
    m:on_exchange(exchange({ protocol = "smtp" }))
    assert.equal(0, reg:count("container_http_requests_total"))
  end)
end)

describe("coroot_metrics limits and bad input", function()
  it("caps the series it creates and counts the updates dropped", function()
    -- one connect makes 5 series; a histogram costs its 11 buckets + 3
    local m, reg = setup({ max_series = 6 })
    m:on_conn_event(ev("connect"))
    m:on_conn_event(ev("connect", { remote_addr = "10.0.0.3:80", local_addr = "10.0.0.1:2" }))
    assert.equal(6, m:stats().series)
    assert.equal(1, value(reg, "container_net_tcp_successful_connects_total", dst_labels("10.0.0.3:80")))
    assert.is_nil(value(reg, "container_net_tcp_connection_time_seconds_total", dst_labels("10.0.0.3:80")))
    assert.equal(4, value(reg, "moonrover_net_metrics_series_dropped_total"))
    m:on_exchange(exchange())
    assert.equal(6, value(reg, "moonrover_net_metrics_series_dropped_total"))
    m:on_conn_event(ev("progress", { bytes_sent = 10 }))
    assert.equal(10, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))

    local m2, reg2 = setup({ max_series = 15 })
    m2:on_exchange(exchange())
    assert.equal(15, m2:stats().series)
    assert.equal(0, value(reg2, "moonrover_net_metrics_series_dropped_total"))
  end)

  it("counts events it cannot attribute, and those of processes that are not measured", function()
    local m, reg = setup()
    m:on_conn_event(ev("connect", { container_id = NONE }))
    m:on_exchange(exchange({ container_id = NONE }))
    m:on_conn_event(ev("connect", { remote_addr = "10.0.0.2" }))
    m:on_conn_event(ev("teleport"))
    m:on_exchange(exchange({ role = "unknown" }))
    m:on_conn_event(ev("connect", { container_id = false }))
    m:on_exchange(exchange({ container_id = false }))
    local function ignored(reason)
      return value(reg, "moonrover_net_metrics_events_ignored_total", { reason = reason })
    end
    assert.equal(2, ignored("no_container_id"))
    assert.equal(2, ignored("not_measured"))
    assert.equal(1, ignored("bad_address"))
    assert.equal(1, ignored("unknown_kind"))
    assert.equal(1, ignored("unknown_role"))
    assert.equal(0, reg:count("container_net_tcp_successful_connects_total"))
  end)

  it("counts a series the registry refuses and goes on", function()
    local reg = recorder.new()
    local counter = reg.counter
    reg.counter = function(name, help, labels)
      if labels and labels.destination == "10.0.0.66:80" then
        error("invalid labels")
      end
      return counter(name, help, labels)
    end
    local m = assert(coroot_metrics.new(reg))
    m:on_conn_event(ev("connect_failed", { remote_addr = "10.0.0.66:80" }))
    m:on_conn_event(ev("connect_failed"))
    assert.equal(1, value(reg, "moonrover_net_metrics_events_ignored_total", { reason = "bad_label" }))
    assert.equal(1, value(reg, "container_net_tcp_failed_connects_total", { container_id = CID, destination = DST }))
  end)
end)

describe("coroot_metrics across a hot reload", function()
  it("keeps connections, listeners and the series count in its exported state", function()
    local m, reg = setup({ max_series = 7 })
    m:on_conn_event(ev("connect"))
    m:on_conn_event(ev("progress", { bytes_sent = 100 }))
    m:on_conn_event(ev("listen", { local_addr = "0.0.0.0:8080", remote_addr = NONE }))
    local state = require("moonrover.lib.serialize").encode(m:export())

    local m2 = assert(coroot_metrics.new(reg, { max_series = 7,
      state = require("moonrover.lib.serialize").decode(state) }))
    assert.same({ series = 6, connections = 1, listens = 1 }, m2:stats())
    m2:on_conn_event(ev("close", { bytes_sent = 130 }))
    assert.equal(130, value(reg, "container_net_tcp_bytes_sent_total", dst_labels()))
    assert.equal(0, value(reg, "container_net_tcp_active_connections", dst_labels()))
    m2:on_conn_event(ev("listen_close", { local_addr = "0.0.0.0:8080" }))
    assert.same({ 'container_net_tcp_listen_info{container_id="/system.slice/api.service",listen_addr="0.0.0.0:8080",'
      .. 'proxy=""} 0' }, reg:lines("container_net_tcp_listen_info"))
    m2:on_conn_event(ev("connect_failed"))
    m2:on_conn_event(ev("connect_failed", { remote_addr = "10.0.0.3:80" }))
    assert.equal(1, value(reg, "moonrover_net_metrics_series_dropped_total"))
  end)
end)
