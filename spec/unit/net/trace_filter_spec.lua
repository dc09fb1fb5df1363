-- net_trace_filter_spec.lua - the filters of `moonrover trace`: their
-- syntax, what each lets through, and that together all must match.
local trace_filter = require("moonrover.net.trace_filter")

local function exchange(fields)
  local ex = { protocol = "http", pid = 7, comm = "nginx", role = "server", ["local"] = "127.0.0.1:8080",
    remote = "127.0.0.1:40000", local_port = 8080, remote_port = 40000, method = "GET", target = "/api/users",
    status = 200, duration_ns = 5e6 }
  for k, v in pairs(fields or {}) do
    ex[k] = v
  end
  return ex
end

local function status(text)
  return assert(trace_filter.status(text))
end

describe("trace filters", function()
  it("reads status classes, comparisons, codes and lists of them", function()
    local cases = {
      { "5xx", { [500] = true, [503] = true, [599] = true, [404] = false, [200] = false } },
      { ">=400", { [400] = true, [404] = true, [500] = true, [399] = false, [200] = false } },
      { ">400", { [400] = false, [401] = true } },
      { "<300", { [200] = true, [204] = true, [300] = false } },
      { "<=300", { [300] = true, [301] = false } },
      { "404", { [404] = true, [403] = false, [405] = false } },
      { "2xx,5xx", { [200] = true, [502] = true, [404] = false, [301] = false } },
      { "2XX", { [201] = true } },
    }
    for _, case in ipairs(cases) do
      local test = status(case[1])
      for code, want in pairs(case[2]) do
        assert.equal(want, test(code), case[1] .. " " .. code)
      end
    end
  end)

  it("refuses what is not a status with a message saying what is", function()
    for _, bad in ipairs({ "6xx", "abc", "99", "600", ">=", "2xx,", "=>400", "" }) do
      local test, err = trace_filter.status(bad)
      assert.is_nil(test, bad)
      assert.matches("is not a status %(e%.g%. 404, 5xx", err)
    end
  end)

  it("reads a port, refusing others", function()
    assert.equal(8080, trace_filter.port("8080"))
    for _, bad in ipairs({ "0", "65536", "x", "80.5" }) do
      local p, err = trace_filter.port(bad)
      assert.is_nil(p)
      assert.matches("is not a port", err)
    end
  end)

  it("lets everything through when no filter is given", function()
    assert.is_true(trace_filter.new({})(exchange()))
    assert.is_true(trace_filter.new({})(exchange({ status = 0, error = "no response" })))
  end)

  it("matches a port at either end of the connection", function()
    local keep = trace_filter.new({ port = 8080 })
    assert.is_true(keep(exchange()))
    assert.is_true(keep(exchange({ role = "client", local_port = 40000, remote_port = 8080 })))
    assert.is_false(keep(exchange({ local_port = 80 })))
  end)

  it("takes no --comm: the processes chosen by name are the kernel's targets, whatever their threads are named",
    function()
      assert.is_true(trace_filter.new({ comm = "nginx" })(exchange({ comm = "acceptor" })))
    end)

  it("matches the status; an exchange without a response matches no status", function()
    local keep = trace_filter.new({ status = status("5xx") })
    assert.is_true(keep(exchange({ status = 502 })))
    assert.is_false(keep(exchange()))
    assert.is_false(trace_filter.new({ status = status("<300") })(exchange({ status = 0, error = "no response" })))
  end)

  it("keeps exchanges at least as long as the minimum duration; one without a duration is not", function()
    local keep = trace_filter.new({ min_duration_ns = 100e6 })
    assert.is_true(keep(exchange({ duration_ns = 100e6 })))
    assert.is_true(keep(exchange({ duration_ns = 250e6 })))
    assert.is_false(keep(exchange({ duration_ns = 99e6 })))
    assert.is_false(keep(exchange({ duration_ns = false })))
  end)

  it("matches a prefix of the target; a response without its request has none", function()
    local keep = trace_filter.new({ path = "/api/" })
    assert.is_true(keep(exchange()))
    assert.is_false(keep(exchange({ target = "/apiary" })))
    assert.is_false(keep(exchange({ target = false })))
  end)

  it("lets an exchange through only when every filter given matches", function()
    local keep = trace_filter.new({ port = 8080, status = status(">=400"), min_duration_ns = 1e6, path = "/api" })
    assert.is_true(keep(exchange({ status = 404 })))
    assert.is_false(keep(exchange({ status = 200 })))
    assert.is_false(keep(exchange({ status = 404, duration_ns = 1e5 })))
    assert.is_false(keep(exchange({ status = 404, target = "/static" })))
    assert.is_false(keep(exchange({ status = 404, local_port = 1, remote_port = 2 })))
  end)
end)
