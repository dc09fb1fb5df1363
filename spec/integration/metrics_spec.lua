-- metrics_spec.lua - the metrics registry (runtime/metrics/metrics.c, metrics_render.c,
-- metrics_labels.c): validation, series identity, value rules and Prometheus text.
local rt = require("moonrover.rt").with_test_api()
local metrics_registry = require("support.metrics_registry")
local ffi, lib = rt.ffi, rt.lib

local COUNTER, GAUGE, HISTOGRAM = lib.MR_COUNTER, lib.MR_GAUGE, lib.MR_HISTOGRAM
local MAX_BOUNDS = lib.MR_HISTOGRAM_BOUNDS_MAX

describe("metrics registry", function()
  local registry = metrics_registry.each_test(before_each, after_each)

  local function series(type, name, help, labels)
    return rt.call(lib.mr_metrics_series, registry(), type, name, help, labels)
  end

  local function render()
    return metrics_registry.render(registry())
  end

  describe("names and labels", function()
    it("accepts Prometheus metric names and rejects others", function()
      for _, name in ipairs({ "a", "_x", ":y", "http_requests_total", "ns:sub_1:x" }) do
        assert.is_number(series(GAUGE, name, nil, ""), name)
      end
      for _, name in ipairs({ "", "9x", "a-b", "a b", "é", "x.y" }) do
        local id, err = series(GAUGE, name, nil, "")
        assert.is_nil(id, name)
        assert.equal(string.format('invalid metric name "%s"', name), err)
      end
    end)

    it("accepts well-formed label sets", function()
      local good = {
        "", 'a="1"', 'a="1",b="2"', '_x="",y9="v"', 'path="/a\\\\b"', 'q="say \\"hi\\""',
        'm="two\\nlines"', 'u="héllo ☃"',
      }
      for _, labels in ipairs(good) do
        assert.is_number(series(COUNTER, "c_total", nil, labels), labels)
      end
    end)

    it("rejects malformed label sets with a one-line reason", function()
      local bad = {
        { "a=1", "expected =\" after the label name" },
        { 'a="1",', "trailing comma" },
        { 'a="1" b="2"', "expected a comma after a value" },
        { 'a="1",a="2"', "label name used twice" },
        { '9a="1"', "expected a label name" },
        { 'a.b="1"', "expected =\" after the label name" },
        { '__name__="x"', "reserved" },
        { 'a="x', "unterminated value" },
        { 'a="x\ny"', "newline in a value" },
        { 'a="\\t"', "escapes are allowed" },
        { 'a="\255"', "not UTF-8" },
        { 'a="\237\160\128"', "not UTF-8" }, -- a UTF-16 surrogate
        { ',a="1"', "expected a label name" },
      }
      for _, case in ipairs(bad) do
        local id, err = series(COUNTER, "c_total", nil, case[1])
        assert.is_nil(id, case[1])
        assert.matches("^invalid labels {", err)
        assert.is_truthy(err:find(case[2], 1, true), err)
        assert.is_nil(err:find("\n"), err)
      end
    end)

    it("reserves the le label for histograms only", function()
      local id, err = series(HISTOGRAM, "lat_seconds", nil, 'le="1"')
      assert.is_nil(id)
      assert.matches("reserved", err)
      assert.is_number(series(GAUGE, "limit", nil, 'le="1"'))
    end)

    it("rejects an unknown type and help text that is not UTF-8", function()
      local id, err = series(7, "x", nil, "")
      assert.is_nil(id)
      assert.equal("invalid metric type 7", err)
      id, err = series(GAUGE, "x", "bad \255", "")
      assert.is_nil(id)
      assert.equal('help text of metric "x" is not UTF-8', err)
    end)
  end)

  describe("series identity", function()
    it("returns the same id for the same name and labels", function()
      local a = series(COUNTER, "req_total", "Requests.", 'code="200"')
      local b = series(COUNTER, "req_total", "Requests.", 'code="500"')
      local c = series(COUNTER, "other_total", nil, 'code="200"')
      assert.are_not.equal(a, b)
      assert.are_not.equal(a, c)
      assert.equal(a, series(COUNTER, "req_total", "Requests.", 'code="200"'))
      assert.equal(b, series(COUNTER, "req_total", nil, 'code="500"'))
    end)

    it("keeps counting in the same series after re-registration", function()
      local id = series(COUNTER, "events_total", nil, 'script="x"')
      lib.mr_metrics_add(registry(), id, 3)
      local again = series(COUNTER, "events_total", nil, 'script="x"')
      lib.mr_metrics_add(registry(), again, 2)
      assert.equal(5, lib.mr_metrics_value(registry(), id))
    end)

    it("takes the help text of the latest registration that gives one", function()
      local a = series(COUNTER, "jobs_total", "Jobs run", 'q="a"')
      lib.mr_metrics_add(registry(), a, 3)
      assert.equal(a, series(COUNTER, "jobs_total", "Jobs run, by queue", 'q="a"'))
      series(COUNTER, "jobs_total", nil, 'q="b"')
      series(COUNTER, "jobs_total", "", 'q="c"')
      local text = render()
      assert.matches("# HELP jobs_total Jobs run, by queue\n", text)
      assert.not_matches("Jobs run\n", text)
      assert.matches('\njobs_total{q="a"} 3\n', text)
    end)

    it("refuses a name used with another type, naming both", function()
      assert.is_number(series(COUNTER, "jobs_total", nil, ""))
      local id, err = series(GAUGE, "jobs_total", nil, 'x="1"')
      assert.is_nil(id)
      assert.equal('metric "jobs_total" is a counter, not a gauge', err)
    end)

    it("refuses names that clash with a histogram's samples", function()
      assert.is_number(series(HISTOGRAM, "lat", nil, ""))
      local id, err = series(COUNTER, "lat_count", nil, "")
      assert.is_nil(id)
      assert.equal('metric "lat_count" clashes with the samples of histogram "lat"', err)
      assert.is_number(series(GAUGE, "q_sum", nil, ""))
      id, err = series(HISTOGRAM, "q", nil, "")
      assert.is_nil(id)
      assert.equal('metric "q" clashes with the samples of gauge "q_sum"', err)
    end)
  end)

  describe("values", function()
    it("counters only go up", function()
      local id = series(COUNTER, "c_total", nil, "")
      lib.mr_metrics_add(registry(), id, 2.5)
      lib.mr_metrics_add(registry(), id, -1)
      lib.mr_metrics_add(registry(), id, 0 / 0)
      lib.mr_metrics_set(registry(), id, 100)
      lib.mr_metrics_observe(registry(), id, 1)
      assert.equal(2.5, lib.mr_metrics_value(registry(), id))
    end)

    it("gauges are set and added to, in both directions", function()
      local id = series(GAUGE, "g", nil, "")
      lib.mr_metrics_set(registry(), id, 10)
      lib.mr_metrics_add(registry(), id, -4)
      lib.mr_metrics_add(registry(), id, 0.5)
      assert.equal(6.5, lib.mr_metrics_value(registry(), id))
      lib.mr_metrics_observe(registry(), id, 1)
      assert.equal(6.5, lib.mr_metrics_value(registry(), id))
    end)

    it("ignores bad series ids", function()
      local id = series(GAUGE, "g", nil, "")
      for _, bad in ipairs({ -1, id + 1, 1000000, -2147483648 }) do
        lib.mr_metrics_add(registry(), bad, 1)
        lib.mr_metrics_set(registry(), bad, 1)
        lib.mr_metrics_observe(registry(), bad, 1)
        assert.equal(0, lib.mr_metrics_value(registry(), bad))
      end
      assert.equal(0, lib.mr_metrics_value(registry(), id))
    end)

    it("counts histogram observations into cumulative buckets", function()
      local id = series(HISTOGRAM, "op_seconds", "Operation latency.", 'op="read"')
      for _, v in ipairs({ 0.00005, 0.0001, 0.003, 0.003, 0.7, 7, 0 / 0 }) do
        lib.mr_metrics_observe(registry(), id, v)
      end
      lib.mr_metrics_add(registry(), id, 5)
      lib.mr_metrics_set(registry(), id, 5)
      assert.equal(6, lib.mr_metrics_value(registry(), id))
      local text = render()
      local function sample(line)
        assert.is_truthy(text:find("\n" .. line .. "\n", 1, true), line .. " in:\n" .. text)
      end
      sample('op_seconds_bucket{op="read",le="0.0001"} 2')
      sample('op_seconds_bucket{op="read",le="0.0025"} 2')
      sample('op_seconds_bucket{op="read",le="0.005"} 4')
      sample('op_seconds_bucket{op="read",le="0.5"} 4')
      sample('op_seconds_bucket{op="read",le="1"} 5')
      sample('op_seconds_bucket{op="read",le="5"} 5')
      sample('op_seconds_bucket{op="read",le="+Inf"} 6')
      sample('op_seconds_sum{op="read"} 7.70615')
      sample('op_seconds_count{op="read"} 6')
      local _, buckets = text:gsub("op_seconds_bucket{", "")
      assert.equal(16, buckets)
    end)
  end)

  describe("bucket bounds", function()
    -- Prometheus' default buckets (client libraries' DefBuckets), which
    -- coroot-node-agent's histograms use.
    local PROMETHEUS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }
    local DEFAULT = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 }

    local function histogram(name, help, labels, bounds)
      local n = bounds and #bounds or 0
      local array = bounds and ffi.new("double[?]", n, bounds)
      return rt.call(lib.mr_metrics_histogram, registry(), name, help, labels, array, n)
    end

    it("writes Prometheus' default buckets as Prometheus does", function()
      local get = assert(histogram("container_http_requests_duration_seconds_total", "HTTP requests by latency",
        'status="200"', PROMETHEUS))
      local post = assert(histogram("container_http_requests_duration_seconds_total", nil, 'status="500"',
        PROMETHEUS))
      for _, v in ipairs({ 0.001, 0.005, 0.0051, 0.3, 1, 9.5, 10, 11 }) do
        lib.mr_metrics_observe(registry(), get, v)
      end
      lib.mr_metrics_observe_ns(registry(), post, 2500000000)
      local expected = table.concat({
        "# HELP container_http_requests_duration_seconds_total HTTP requests by latency",
        "# TYPE container_http_requests_duration_seconds_total histogram",
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.005"} 2',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.01"} 3',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.025"} 3',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.05"} 3',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.1"} 3',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.25"} 3',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="0.5"} 4',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="1"} 5',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="2.5"} 5',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="5"} 5',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="10"} 7',
        'container_http_requests_duration_seconds_total_bucket{status="200",le="+Inf"} 8',
        'container_http_requests_duration_seconds_total_sum{status="200"} 31.8111',
        'container_http_requests_duration_seconds_total_count{status="200"} 8',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.005"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.01"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.025"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.05"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.1"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.25"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="0.5"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="1"} 0',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="2.5"} 1',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="5"} 1',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="10"} 1',
        'container_http_requests_duration_seconds_total_bucket{status="500",le="+Inf"} 1',
        'container_http_requests_duration_seconds_total_sum{status="500"} 2.5',
        'container_http_requests_duration_seconds_total_count{status="500"} 1',
        "",
      }, "\n")
      assert.equal(expected, render())
    end)

    it("gives no bounds the default ones, the same text as a histogram registered without them", function()
      local plain = assert(series(HISTOGRAM, "plain_seconds", nil, ""))
      local none = assert(histogram("none_seconds", nil, ""))
      local listed = assert(histogram("listed_seconds", nil, "", DEFAULT))
      for _, id in ipairs({ plain, none, listed }) do
        lib.mr_metrics_observe(registry(), id, 0.02)
        lib.mr_metrics_observe(registry(), id, 7)
      end
      local text = render()
      local function section(name)
        return (text:match("# TYPE " .. name .. " histogram\n.-" .. name .. "_count 2\n"):gsub(name, "x"))
      end
      assert.equal(section("plain_seconds"), section("none_seconds"))
      assert.equal(section("plain_seconds"), section("listed_seconds"))
      local _, buckets = text:gsub("plain_seconds_bucket{", "")
      assert.equal(16, buckets)
      assert.equal(plain, assert(histogram("plain_seconds", nil, "", DEFAULT)))
      assert.equal(none, assert(series(HISTOGRAM, "none_seconds", nil, "")))
    end)

    it("writes each le in the shortest form Prometheus' Go clients give it", function()
      local bounds = { 1e-05, 0.0001, 0.1 + 0.2, 1, 10, 123456.5, 1e6, 1.5e7, 2 ^ 60 }
      local id = assert(histogram("odd_bounds", nil, "", bounds))
      lib.mr_metrics_observe(registry(), id, 1.5e7)
      local les = {}
      for le, n in render():gmatch('odd_bounds_bucket{le="([^"]+)"} (%d+)') do
        les[#les + 1] = le .. "=" .. n
      end
      assert.same({ "1e-05=0", "0.0001=0", "0.30000000000000004=0", "1=0", "10=0", "123456.5=0", "1e+06=0",
        "1.5e+07=1", "1.152921504606847e+18=1", "+Inf=1" }, les)
    end)

    it("counts a value equal to a bound in that bound's bucket, above the last in +Inf", function()
      local id = assert(histogram("edges", nil, "", { 1, 2 }))
      for _, v in ipairs({ 0, 1, 1.0000001, 2, 3, math.huge, 0 / 0 }) do
        lib.mr_metrics_observe(registry(), id, v)
      end
      assert.equal(table.concat({
        "# TYPE edges histogram",
        'edges_bucket{le="1"} 2',
        'edges_bucket{le="2"} 4',
        'edges_bucket{le="+Inf"} 6',
        "edges_sum +Inf",
        "edges_count 6",
        "",
      }, "\n"), render())
    end)

    it("takes up to MR_HISTOGRAM_BOUNDS_MAX bounds", function()
      local bounds = {}
      for i = 1, MAX_BOUNDS do
        bounds[i] = i / 8
      end
      local id = assert(histogram("many", nil, "", bounds))
      lib.mr_metrics_observe(registry(), id, 4)
      local text = render()
      local _, buckets = text:gsub("many_bucket{", "")
      assert.equal(MAX_BOUNDS + 1, buckets)
      assert.matches('\nmany_bucket{le="3.875"} 0\nmany_bucket{le="4"} 1\n', text)
      bounds[MAX_BOUNDS + 1] = bounds[MAX_BOUNDS] + 1
      local bad, err = histogram("many_more", nil, "", bounds)
      assert.is_nil(bad)
      assert.equal(('histogram "many_more": at most %d bucket bounds, not %d'):format(MAX_BOUNDS, MAX_BOUNDS + 1), err)
    end)

    it("refuses bounds that are not finite, above 0 and strictly ascending, with a one-line reason", function()
      local cases = {
        { { 0.1, 0 }, 'histogram "h": bucket bound 2 is 0, not a finite number above 0' },
        { { -1 }, 'histogram "h": bucket bound 1 is -1, not a finite number above 0' },
        { { 0.5, 0 / 0 }, 'histogram "h": bucket bound 2 is NaN, not a finite number above 0' },
        { { 1, math.huge }, 'histogram "h": bucket bound 2 is +Inf, not a finite number above 0' },
        { { 0.1, 0.05 }, 'histogram "h": bucket bounds must be strictly ascending, not 0.1 then 0.05' },
        { { 0.1, 0.25, 0.25 }, 'histogram "h": bucket bounds must be strictly ascending, not 0.25 then 0.25' },
      }
      for _, case in ipairs(cases) do
        local id, err = histogram("h", nil, "", case[1])
        assert.is_nil(id)
        assert.equal(case[2], err)
      end
      local id, err = rt.call(lib.mr_metrics_histogram, registry(), "h", nil, "", nil, 3)
      assert.is_nil(id)
      assert.equal('histogram "h": 3 bucket bounds announced but none given', err)
      assert.equal("", render())
      assert.is_number(histogram("h", nil, "", { 0.5 }))
    end)

    it("belong to the metric: other bounds for its name are refused, naming both lists", function()
      local a = assert(histogram("lat_seconds", nil, 'op="a"', PROMETHEUS))
      assert.is_number(histogram("lat_seconds", nil, 'op="b"', PROMETHEUS))
      assert.equal(a, histogram("lat_seconds", "Latency", 'op="a"', PROMETHEUS))
      local id, err = histogram("lat_seconds", nil, 'op="c"', { 0.1, 1 })
      assert.is_nil(id)
      assert.equal('histogram "lat_seconds" has buckets {0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10}, '
        .. "not {0.1,1}", err)
      id, err = series(HISTOGRAM, "lat_seconds", nil, 'op="a"')
      assert.is_nil(id)
      assert.equal('histogram "lat_seconds" has buckets {0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10}, '
        .. "not {0.0001,0.00025,0.0005,0.001,0.0025,0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5}", err)
      assert.is_number(series(HISTOGRAM, "default_seconds", nil, ""))
      id, err = histogram("default_seconds", nil, "", { 1 })
      assert.is_nil(id)
      assert.equal('histogram "default_seconds" has buckets '
        .. "{0.0001,0.00025,0.0005,0.001,0.0025,0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5}, not {1}", err)
      local _, series_seen = render():gsub('lat_seconds_count{op="', "")
      assert.equal(2, series_seen)
    end)

    it("checks the name, labels and type as for any series", function()
      local id, err = histogram("9x", nil, "", PROMETHEUS)
      assert.is_nil(id)
      assert.equal('invalid metric name "9x"', err)
      id, err = histogram("h", nil, 'le="1"', PROMETHEUS)
      assert.is_nil(id)
      assert.matches("reserved", err)
      assert.is_number(series(COUNTER, "c_total", nil, ""))
      id, err = histogram("c_total", nil, "", PROMETHEUS)
      assert.is_nil(id)
      assert.equal('metric "c_total" is a counter, not a histogram', err)
    end)
  end)

  describe("rendering", function()
    it("writes the exact exposition text of a small registry", function()
      local req = series(COUNTER, "http_requests_total", "Requests served.", 'code="200",path="/a"')
      local req5 = series(COUNTER, "http_requests_total", "Requests served.", 'code="500",path="/a"')
      local temp = series(GAUGE, "temperature", "Line one\nand a \\ backslash", "")
      local lat = series(HISTOGRAM, "lat_seconds", nil, "")
      local esc = series(GAUGE, "esc", "", 'v="q\\"b\\\\n\\n"')
      lib.mr_metrics_add(registry(), req, 42)
      lib.mr_metrics_add(registry(), req5, 1)
      lib.mr_metrics_set(registry(), temp, -0.1)
      lib.mr_metrics_observe(registry(), lat, 0.02)
      lib.mr_metrics_set(registry(), esc, 1e21)
      local expected = table.concat({
        "# HELP http_requests_total Requests served.",
        "# TYPE http_requests_total counter",
        'http_requests_total{code="200",path="/a"} 42',
        'http_requests_total{code="500",path="/a"} 1',
        "# HELP temperature Line one\\nand a \\\\ backslash",
        "# TYPE temperature gauge",
        "temperature -0.1",
        "# TYPE lat_seconds histogram",
        'lat_seconds_bucket{le="0.0001"} 0',
        'lat_seconds_bucket{le="0.00025"} 0',
        'lat_seconds_bucket{le="0.0005"} 0',
        'lat_seconds_bucket{le="0.001"} 0',
        'lat_seconds_bucket{le="0.0025"} 0',
        'lat_seconds_bucket{le="0.005"} 0',
        'lat_seconds_bucket{le="0.01"} 0',
        'lat_seconds_bucket{le="0.025"} 1',
        'lat_seconds_bucket{le="0.05"} 1',
        'lat_seconds_bucket{le="0.1"} 1',
        'lat_seconds_bucket{le="0.25"} 1',
        'lat_seconds_bucket{le="0.5"} 1',
        'lat_seconds_bucket{le="1"} 1',
        'lat_seconds_bucket{le="2.5"} 1',
        'lat_seconds_bucket{le="5"} 1',
        'lat_seconds_bucket{le="+Inf"} 1',
        "lat_seconds_sum 0.02",
        "lat_seconds_count 1",
        "# TYPE esc gauge",
        'esc{v="q\\"b\\\\n\\n"} 1e+21',
        "",
      }, "\n")
      assert.equal(expected, render())
    end)

    it("prints integers as integers and other numbers exactly", function()
      local g = series(GAUGE, "g", nil, "")
      local cases = {
        { 0, "0" }, { 42, "42" }, { -7, "-7" }, { 123456789012, "123456789012" },
        { 0.5, "0.5" }, { 1 / 3, "0.3333333333333333" }, { 0.1 + 0.2, "0.30000000000000004" },
        { math.huge, "+Inf" }, { -math.huge, "-Inf" }, { 0 / 0, "NaN" },
      }
      for _, case in ipairs(cases) do
        lib.mr_metrics_set(registry(), g, case[1])
        assert.equal("# TYPE g gauge\ng " .. case[2] .. "\n", render())
      end
    end)

    it("prints the shortest text that reads back as the value", function()
      local g = series(GAUGE, "g", nil, "")
      -- 0.00010756 itself, and the next double up (what adding two durations
      -- of nanoseconds as seconds gives): 17 digits are its shortest.
      for _, text in ipairs({ "0.00010756", "0.00010756000000000001", "5e-324", "1.7976931348623157e+308" }) do
        lib.mr_metrics_set(registry(), g, tonumber(text))
        assert.equal("# TYPE g gauge\ng " .. text .. "\n", render())
      end
    end)

    it("sums without the noise of rounding: 0.1 added ten times is 1", function()
      local c = series(COUNTER, "c_total", nil, "")
      local g = series(GAUGE, "g", nil, "")
      local h = series(HISTOGRAM, "h_seconds", nil, "")
      for _ = 1, 10 do
        lib.mr_metrics_add(registry(), c, 0.1)
        lib.mr_metrics_add(registry(), g, 0.1)
        lib.mr_metrics_observe(registry(), h, 0.1)
      end
      assert.equal(1, lib.mr_metrics_value(registry(), c))
      assert.equal(1, lib.mr_metrics_value(registry(), g))
      assert.matches("\nc_total 1\n", render())
      assert.matches("\ng 1\n", render())
      assert.matches("\nh_seconds_sum 1\n", render())
      lib.mr_metrics_set(registry(), g, 0.3)
      lib.mr_metrics_add(registry(), g, math.huge)
      assert.matches("\ng %+Inf\n", render())
    end)

    it("sums durations given in nanoseconds exactly", function()
      local h = series(HISTOGRAM, "batch_seconds", nil, "")
      lib.mr_metrics_observe_ns(registry(), h, 1997)
      lib.mr_metrics_observe_ns(registry(), h, 105563)
      local text = render()
      assert.matches('\nbatch_seconds_bucket{le="0.0001"} 1\n', text)
      assert.matches('\nbatch_seconds_bucket{le="0.00025"} 2\n', text)
      assert.matches("\nbatch_seconds_sum 0.00010756\n", text)
      assert.matches("\nbatch_seconds_count 2\n", text)
    end)

    it("renders an empty registry as empty text, twice", function()
      assert.equal("", render())
      assert.equal("", render())
    end)

    it("handles 5000 series", function()
      local ids = {}
      for i = 1, 5000 do
        local name = "stress_" .. (i % 10) .. "_total"
        ids[i] = assert(series(COUNTER, name, "Stress " .. (i % 10), 'i="' .. i .. '"'))
        lib.mr_metrics_add(registry(), ids[i], i)
      end
      for i = 1, 5000, 7 do
        local name = "stress_" .. (i % 10) .. "_total"
        assert.equal(ids[i], series(COUNTER, name, nil, 'i="' .. i .. '"'))
      end
      local text = render()
      local seen = 0
      for name, i, v in text:gmatch('\n(stress_%d_total){i="(%d+)"} (%d+)') do
        assert.equal("stress_" .. (tonumber(i) % 10) .. "_total", name)
        assert.equal(i, v)
        seen = seen + 1
      end
      assert.equal(5000, seen)
      local _, types = text:gsub("# TYPE ", "")
      assert.equal(10, types)
      assert.is_truthy(text:find('stress_1_total{i="1"} 1\nstress_1_total{i="11"} 11\n', 1, true))
    end)
  end)
end)
