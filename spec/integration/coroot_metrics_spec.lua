-- coroot_metrics_spec.lua - the coroot-compatible network metrics on the
-- runtime's own pieces: series made in the runtime's metrics registry (its
-- label and name checks, its text format) and container ids read through the
-- runtime's /proc reader, ROVER_HOST_PROC_MAPPING included.
local rt = require("moonrover.rt").with_test_api()
local coroot_metrics = require("moonrover.net.coroot_metrics")
local container_id = require("moonrover.net.coroot_container")
local cgroup_layout = require("moonrover.lib.cgroup_layout")
local files = require("support.files")
local shell = require("support.shell")
local ffi, lib = rt.ffi, rt.lib

ffi.cdef([[
int getpid(void);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
]])

local ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

-- The agent's metrics API (counter, gauge, histogram) over a runtime registry.
local function registry(m)
  local function labels_text(labels)
    local keys, parts = {}, {}
    for k in pairs(labels or {}) do
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for i, k in ipairs(keys) do
      parts[i] = string.format('%s="%s"', k, labels[k])
    end
    return table.concat(parts, ",")
  end
  local function series(kind, name, help, labels)
    return assert(rt.call(lib.mr_metrics_series, m, kind, name, help, labels_text(labels)))
  end
  return {
    counter = function(name, help, labels)
      local id = series(lib.MR_COUNTER, name, help, labels)
      return {
        inc = function() lib.mr_metrics_add(m, id, 1) end,
        add = function(_, v) lib.mr_metrics_add(m, id, v) end,
      }
    end,
    gauge = function(name, help, labels)
      local id = series(lib.MR_GAUGE, name, help, labels)
      return { set = function(_, v) lib.mr_metrics_set(m, id, v) end }
    end,
    histogram = function(name, help, labels)
      local id = series(lib.MR_HISTOGRAM, name, help, labels)
      return { observe = function(_, v) lib.mr_metrics_observe(m, id, v) end }
    end,
  }
end

describe("coroot metrics in the runtime's registry", function()
  local m

  before_each(function()
    m = assert(rt.call(lib.mr_metrics_new))
  end)

  after_each(function()
    lib.mr_metrics_free(m)
  end)

  local function render()
    local len = ffi.new("size_t[1]")
    return ffi.string(assert(lib.mr_metrics_render(m, len)), len[0])
  end

  it("creates every series with labels the registry accepts, IPv6 destinations included", function()
    local metrics = assert(coroot_metrics.new(registry(m)))
    local cid, dst = "/docker/" .. ID, "[fd00::2]:443"
    local base = { ts = 1e9, pid = 4242, container_id = cid, role = "client", local_addr = "[fd00::1]:40100",
      remote_addr = dst }
    local function event(kind, extra)
      local e = { kind = kind }
      for k, v in pairs(base) do
        e[k] = v
      end
      for k, v in pairs(extra or {}) do
        e[k] = v
      end
      return e
    end
    metrics:on_conn_event(event("connect", { connect_ns = 250000 }))
    metrics:on_conn_event(event("progress", { bytes_sent = 300, bytes_received = 9000 }))
    metrics:on_conn_event(event("retransmit"))
    metrics:on_conn_event(event("connect_failed", { remote_addr = "10.9.9.9:5432" }))
    metrics:on_conn_event(event("listen", { local_addr = "[::]:8443", remote_addr = "" }))
    metrics:on_exchange({ protocol = "http", status = 201, role = "client", remote = dst, container_id = cid,
      request_start_ns = 1e9, response_start_ns = 1e9 + 30e6 })
    metrics:on_exchange({ protocol = "http", status = 0, error = "no response", role = "server",
      remote = "[fd00::3]:50000", container_id = cid, request_start_ns = 1e9 })
    local text = render()
    local dl = 'actual_destination="[fd00::2]:443",container_id="/docker/' .. ID .. '",destination="[fd00::2]:443"'
    for _, line in ipairs({
      "container_net_tcp_successful_connects_total{" .. dl .. "} 1",
      "container_net_tcp_connection_time_seconds_total{" .. dl .. "} 0.00025",
      "container_net_tcp_bytes_sent_total{" .. dl .. "} 300",
      "container_net_tcp_bytes_received_total{" .. dl .. "} 9000",
      "container_net_tcp_active_connections{" .. dl .. "} 1",
      "container_net_tcp_retransmits_total{" .. dl .. "} 1",
      'container_net_tcp_failed_connects_total{container_id="/docker/' .. ID .. '",destination="10.9.9.9:5432"} 1',
      'container_net_tcp_listen_info{container_id="/docker/' .. ID .. '",listen_addr="[::]:8443",proxy=""} 1',
      'container_http_requests_total{' .. dl .. ',status="2xx"} 1',
      "# TYPE container_http_requests_duration_seconds_total histogram",
      'container_http_requests_duration_seconds_total_bucket{' .. dl .. ',le="0.05"} 1',
      "container_http_requests_duration_seconds_total_count{" .. dl .. "} 1",
      'container_http_inbound_requests_total{container_id="/docker/' .. ID .. '",status="unknown"} 1',
      "moonrover_net_metrics_series_dropped_total 0",
    }) do
      assert.truthy(text:find("\n" .. line .. "\n", 1, true), line .. " is not in:\n" .. text)
    end
    assert.falsy(text:find("container_http_inbound_requests_duration_seconds_total", 1, true))
  end)
end)

describe("container ids read through the runtime", function()
  local MAPPING = "ROVER_HOST_PROC_MAPPING"
  local dir, saved

  setup(function()
    saved = os.getenv(MAPPING)
    dir = os.tmpname()
    os.remove(dir)
    shell.must("mkdir -m 700 " .. dir .. " " .. dir .. "/1 " .. dir .. "/4242 " .. dir .. "/4243")
    files.write(dir .. "/1/mountinfo", "25 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
    files.write(dir .. "/4242/cgroup", "0::/system.slice/docker-" .. ID .. ".scope\n")
    files.write(dir .. "/4243/cgroup", "12:cpu,cpuacct:/kubepods/besteffort/pod1/crio-" .. ID .. "\n1:name=systemd:/\n")
  end)

  teardown(function()
    if saved then
      ffi.C.setenv(MAPPING, saved, 1)
    else
      ffi.C.unsetenv(MAPPING)
    end
    shell.must("rm -rf " .. dir)
  end)

  it("reads this process's cgroup as the kernel shows it", function()
    ffi.C.unsetenv(MAPPING)
    local pid = ffi.C.getpid()
    local want = container_id.from_cgroup(assert(files.read("/proc/self/cgroup")))
    assert.equal(want, container_id.new():lookup(pid, 0))
  end)

  it("reads the cgroup layout of this process's mount namespace", function()
    ffi.C.unsetenv(MAPPING)
    local want = cgroup_layout.find(assert(files.read("/proc/self/mountinfo")))
    local layout, line = container_id.host_layout()
    assert.same(want, layout)
    assert.equal(cgroup_layout.describe(want), line)
  end)

  it("reads the host's layout from its init's mountinfo under ROVER_HOST_PROC_MAPPING", function()
    assert.equal(0, ffi.C.setenv(MAPPING, dir, 1))
    local layout, line = container_id.host_layout()
    assert.equal("unified", layout.kind)
    assert.equal("unified, cgroup v2 at /sys/fs/cgroup", line)
  end)

  it("reads the host's /proc named by ROVER_HOST_PROC_MAPPING", function()
    assert.equal(0, ffi.C.setenv(MAPPING, dir, 1))
    local r = container_id.new()
    assert.equal("/docker/" .. ID, r:lookup(4242, 0))
    assert.equal("/crio/" .. ID, r:lookup(4243, 0))
    local id, err = r:lookup(4244, 0)
    assert.is_nil(id)
    assert.truthy(err:find("4244", 1, true), err)
  end)
end)
