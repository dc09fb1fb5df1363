-- Specs for a NETWORK task's rover_net_p_* meters: buckets as Rover counts
-- them, per-interval deltas, names and labels per traffic, and the L4 counts
-- from connection events (bytes from running totals, accepts whose process
-- is known only later), fed batches shaped like the tracer's.
local connections = require("moonrover.rover.network_task.connections")
local meters = require("moonrover.rover.network_task.meters")
local runner = require("moonrover.rover.network_task.runner")
local traffic = require("moonrover.rover.network_task.traffic")
local tables = require("support.tables")

local CLOCK = { seconds = 0, nanos = 0 }
local NGINX = { pid = 100, id = "p-nginx", entity = { layer = "OS_LINUX", serviceName = "web", instanceName = "host-1",
  processName = "nginx" } }
local BACKEND = { pid = 200, id = "p-backend", entity = { layer = "OS_LINUX", serviceName = "web",
  instanceName = "host-1", processName = "python3" } }

local function exchange(fields)
  return tables.merged({ protocol = "http", method = "GET", target = "/", version = "HTTP/1.1", status = 200,
    request_bytes = 100, response_bytes = 300, request_start_ns = 1e9, request_end_ns = 1e9 + 1000,
    response_start_ns = 1e9 + 3e6, response_end_ns = 1e9 + 4e6, duration_ns = 4e6, pid = NGINX.pid,
    comm = "nginx", role = "server", ["local"] = "10.0.0.5:80", remote = "10.0.0.9:51000", conn = 1,
    tls = false }, fields)
end

local function conn_event(fields)
  return tables.merged({ kind = "progress", ts = 1e9, pid = NGINX.pid, comm = "nginx", role = "server",
    local_addr = "10.0.0.5:80", remote_addr = "10.0.0.9:51000", conn = 1, bytes_sent = 0, bytes_received = 0 }, fields)
end

local function new_runner(members, log)
  local streams = { add = function() return true end, remove = function() end }
  local sender = { add = function() end, remove = function() end }
  local r = assert(runner.new({ id = "t1", target = "NETWORK", process_ids = { "p-nginx" } }, members or { NGINX },
    { prefix = "rover_net_p", streams = streams, sender = sender, log = log or function() end,
      regex = function() return nil, "no regex in unit specs" end }))
  assert(r:start())
  return r
end

-- name -> list of meters of that name, from the collections of a report.
local function by_name(collections)
  local out = {}
  for _, c in ipairs(collections) do
    for _, m in ipairs(c.meterData) do
      local v = m.singleValue or m.histogram
      out[v.name] = out[v.name] or {}
      table.insert(out[v.name], v)
    end
  end
  return out
end

local function label(meter, name)
  for _, l in ipairs(meter.labels) do
    if l.name == name then
      return l.value
    end
  end
  return nil
end

describe("rover network meters", function()
  describe("buckets", function()
    it("counts a value in the bucket of the last lower bound it reaches, the first below them all", function()
      local b = meters.DURATION_BUCKETS
      assert.equal(1, meters.bucket(b, 0))
      assert.equal(1, meters.bucket(b, 1))
      assert.equal(2, meters.bucket(b, 2))
      assert.equal(2, meters.bucket(b, 4.9))
      assert.equal(3, meters.bucket(b, 5))
      assert.equal(#b, meters.bucket(b, 30000))
      assert.equal(#b, meters.bucket(b, 1e9))
    end)

    it("are Rover's", function()
      assert.equal(45, #meters.DURATION_BUCKETS)
      assert.equal(25, #meters.SIZE_BUCKETS)
      assert.equal(52428800, meters.SIZE_BUCKETS[25])
      assert.equal(34, #meters.EXE_TIME_BUCKETS)
      assert.equal(5e9, meters.EXE_TIME_BUCKETS[34])
    end)
  end)

  describe("HTTP/1", function()
    it("sends requests, statuses, averages and histograms of one server traffic, with Rover's labels", function()
      local r = new_runner()
      r:on_http({ exchange(), exchange({ status = 500, duration_ns = 12.7e6, request_bytes = 300 }),
        exchange({ conn = 2 }) })
      local report = r:report(5000, CLOCK)
      assert.equal(1, #report.meters)
      local first = report.meters[1].meterData[1]
      assert.same({ "web", "host-1", 5000 }, { first.service, first.serviceInstance, first.timestamp })
      local m = by_name(report.meters)
      assert.equal(3, m.rover_net_p_http1_request_counter[1].value)
      local codes = {}
      for _, s in ipairs(m.rover_net_p_http1_response_status_counter) do
        codes[label(s, "code")] = s.value
      end
      assert.same({ ["200"] = 2, ["500"] = 1 }, codes)
      assert.equal((4 + 12 + 4) / 3, m.rover_net_p_http1_server_duration_avg[1].value)
      assert.equal((100 + 300 + 100) / 3, m.rover_net_p_http1_request_package_size_avg[1].value)
      assert.equal(300, m.rover_net_p_http1_response_package_size_avg[1].value)
      local h = m.rover_net_p_http1_server_duration_histogram[1]
      assert.equal(45, #h.values)
      assert.same({ bucket = 2, count = 2 }, h.values[2])
      assert.same({ bucket = 10, count = 1 }, h.values[4])
      assert.same({
        { name = "server_process_id", value = "p-nginx" }, { name = "client_address", value = "10.0.0.9:51000" },
        { name = "side", value = "server" }, { name = "protocol", value = "http" },
        { name = "is_ssl", value = "false" },
      }, m.rover_net_p_http1_request_counter[1].labels)
    end)

    it("sends each interval's delta, and nothing for an empty interval", function()
      local r = new_runner()
      r:on_http({ exchange(), exchange() })
      assert.equal(2, by_name(r:report(1, CLOCK).meters).rover_net_p_http1_request_counter[1].value)
      assert.same({}, r:report(2, CLOCK).meters)
      r:on_http({ exchange() })
      assert.equal(1, by_name(r:report(3, CLOCK).meters).rover_net_p_http1_request_counter[1].value)
    end)

    it("leaves out other processes' exchanges and exchanges without a request or response", function()
      local r = new_runner()
      r:on_http({ exchange({ pid = 999 }), exchange({ status = 0, error = "no response" }),
        exchange({ method = false, request_bytes = false, duration_ns = false }) })
      assert.same({}, r:report(1, CLOCK).meters)
      assert.equal(0, r:stats().exchanges)
    end)

    it("names the peer by its OAP id when it is a process of the task, as local when on this host", function()
      local r = new_runner({ NGINX, BACKEND })
      r:on_connection({ conn_event({ kind = "accept", pid = BACKEND.pid, conn = 7, local_addr = "127.0.0.1:8080",
        remote_addr = "127.0.0.1:40000" }) })
      r:on_http({ exchange({ role = "client", conn = 8, ["local"] = "127.0.0.1:40000", remote = "127.0.0.1:8080" }),
        exchange({ role = "client", conn = 9, ["local"] = "127.0.0.1:40001", remote = "127.0.0.1:9999" }) })
      local m = by_name(r:report(1, CLOCK).meters)
      local peers = {}
      for _, s in ipairs(m.rover_net_p_http1_request_counter) do
        assert.equal("p-nginx", label(s, "client_process_id"))
        assert.equal("client", label(s, "side"))
        peers[#peers + 1] = label(s, "server_process_id") or ("local=" .. tostring(label(s, "server_local")))
      end
      table.sort(peers)
      assert.same({ "local=true", "p-backend" }, peers)
      assert.truthy(m.rover_net_p_http1_client_duration_avg)
    end)
  end)

  describe("L4", function()
    it("counts bytes from the running totals, connects with their time, closes and retransmits", function()
      local r = new_runner()
      local function client(fields)
        fields.role, fields.conn, fields.local_addr, fields.remote_addr = "client", 3, "10.0.0.5:40000",
          "10.0.0.7:5432"
        return conn_event(fields)
      end
      r:on_connection({
        client({ kind = "connect", connect_ns = 2e6 }),
        client({ kind = "progress", bytes_sent = 1000, bytes_received = 50 }),
        client({ kind = "retransmit", bytes_sent = 1000, bytes_received = 50 }),
      })
      local m = by_name(r:report(1, CLOCK).meters)
      assert.equal(1000, m.rover_net_p_client_write_bytes_counter[1].value)
      assert.equal(50, m.rover_net_p_client_read_bytes_counter[1].value)
      assert.equal(1, m.rover_net_p_client_connect_counts_counter[1].value)
      assert.equal(2e6, m.rover_net_p_client_connect_exe_time_counter[1].value)
      assert.equal(1, m.rover_net_p_client_retransmit_counts_counter[1].value)
      assert.same({ { bucket = 2e6, count = 1 } }, m.rover_net_p_client_connect_exe_time_histogram[1].values)
      assert.equal("10.0.0.7:5432", label(m.rover_net_p_client_write_bytes_counter[1], "server_address"))
      assert.equal("unknown", label(m.rover_net_p_client_write_bytes_counter[1], "protocol"))
      r:on_connection({ client({ kind = "close", bytes_sent = 1500, bytes_received = 50 }) })
      m = by_name(r:report(2, CLOCK).meters)
      assert.equal(500, m.rover_net_p_client_write_bytes_counter[1].value)
      assert.is_nil(m.rover_net_p_client_read_bytes_counter)
      assert.equal(1, m.rover_net_p_client_close_counts_counter[1].value)
      assert.same({}, r:report(3, CLOCK).meters)
    end)

    it("counts an accept whose process is known only at the connection's next event", function()
      local c = connections.new({ [NGINX.pid] = NGINX }, traffic.peers())
      assert.is_nil(c:on_event(conn_event({ kind = "accept", pid = 0, conn = 5 })))
      assert.is_nil(c:on_event(conn_event({ kind = "accept", pid = 0, conn = 6 })))
      assert.truthy(c:on_event(conn_event({ kind = "close", conn = 5, bytes_received = 10 })))
      assert.is_nil(c:on_event(conn_event({ kind = "close", pid = 999, conn = 6 })))
      local seen = {}
      c:drain(function(conn, counts) seen[#seen + 1] = { conn.member.id, counts.connects, counts.closes } end)
      assert.same({ { "p-nginx", 1, 1 } }, seen)
    end)

    it("names the peer process of connections that closed together in the interval", function()
      local r = new_runner({ NGINX, BACKEND })
      local server = { pid = BACKEND.pid, role = "server", conn = 7, local_addr = "127.0.0.1:8080",
        remote_addr = "127.0.0.1:40000" }
      local client = { role = "client", conn = 8, local_addr = "127.0.0.1:40000", remote_addr = "127.0.0.1:8080" }
      local function ev(base, kind)
        local e = { kind = kind }
        for k, v in pairs(base) do
          e[k] = v
        end
        return conn_event(e)
      end
      r:on_connection({ ev(client, "connect"), ev(server, "accept"), ev(server, "close"), ev(client, "close") })
      local m = by_name(r:report(1, CLOCK).meters)
      assert.equal("p-backend", label(m.rover_net_p_client_close_counts_counter[1], "server_process_id"))
      assert.equal("p-nginx", label(m.rover_net_p_server_close_counts_counter[1], "client_process_id"))
    end)

    it("knows the task's local addresses while their connections are open", function()
      local peers = traffic.peers()
      local c = connections.new({ [BACKEND.pid] = BACKEND }, peers)
      local function accepted(conn, kind)
        c:on_event(conn_event({ kind = kind, pid = BACKEND.pid, conn = conn, local_addr = "127.0.0.1:8080",
          remote_addr = "127.0.0.1:" .. (40000 + conn) }))
      end
      accepted(1, "accept")
      accepted(2, "accept")
      accepted(1, "close")
      c:drain(function() end)
      c:forget_closed()
      assert.equal(BACKEND, traffic.member_at(peers, "127.0.0.1:8080"))
      accepted(2, "close")
      c:drain(function() end)
      assert.equal(BACKEND, traffic.member_at(peers, "127.0.0.1:8080"))
      c:forget_closed()
      assert.is_nil(traffic.member_at(peers, "127.0.0.1:8080"))
      assert.is_true(peers.local_ips["127.0.0.1"])
    end)

    it("forgets accepts whose process stays unknown past a bound, and says so once", function()
      local lines = {}
      local r = new_runner(nil, function(_, fmt, ...) lines[#lines + 1] = fmt:format(...) end)
      local accepts = {}
      for i = 1, 65537 do
        accepts[i] = conn_event({ kind = "accept", pid = 0, conn = 1000 + i })
      end
      r:on_connection(accepts)
      r:report(1, CLOCK)
      r:report(2, CLOCK)
      assert.same({ "task t1: forgot 65536 accepted connections whose process was not known yet (65536 so far)" },
        lines)
    end)

    it("labels a connection with the protocol an exchange on it showed", function()
      local r = new_runner()
      r:on_connection({ conn_event({ kind = "accept", conn = 1 }) })
      r:on_http({ exchange() })
      local m = by_name(r:report(1, CLOCK).meters)
      assert.equal("http", label(m.rover_net_p_server_connect_counts_counter[1], "protocol"))
    end)
  end)

  describe("traffic", function()
    it("treats an unknown role as a client, as Rover does", function()
      local _, labels, role = traffic.of(traffic.peers(), NGINX, "unknown", "[2001:db8::1]:443", "unknown")
      assert.equal("client", role)
      assert.same({ name = "server_address", value = "[2001:db8::1]:443" }, labels[2])
      assert.equal("2001:db8::1", traffic.ip("[2001:db8::1]:443"))
    end)
  end)
end)
