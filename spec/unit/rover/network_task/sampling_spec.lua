-- Specs for a NETWORK task's sampling rules (ExtensionConfigJSON's
-- NetworkSamplings) as Rover applies them: trace headers, rule choice by
-- path, 5xx / 4xx / slow, and the 10 slowest per process and kind per report.
local sampling = require("moonrover.rover.network_task.sampling")
local tables = require("support.tables")

local NGINX = { pid = 100, id = "p-nginx" }
local OTHER = { pid = 200, id = "p-other" }

-- URIRegex in these specs is a Lua pattern: the real matcher (POSIX, from the
-- runtime) is not loaded in unit specs.
local function regex(pattern)
  if pattern == "(" then
    return nil, "parentheses not balanced"
  end
  return { match = function(_, s) return s:find(pattern) end }
end

local function sampler(json)
  return assert(sampling.new(json, { regex = regex }))
end

local function exchange(fields)
  return tables.merged({ method = "GET", target = "/api/items?id=3", status = 200, duration_ns = 5e6, trace_id = "t-1",
    trace_header = "sw8", pid = NGINX.pid, role = "server" }, fields)
end

local DEFAULT = '{"NetworkSamplings":[{"MinDuration":100,"When4xx":true,"When5xx":true,'
  .. '"Settings":{"RequireCompleteRequest":true,"RequireCompleteResponse":false}}]}'

describe("rover network sampling", function()
  it("samples nothing without NetworkSamplings", function()
    for _, text in ipairs({ nil, "{}", '{"NetworkSamplings":[]}' }) do
      local s, problems = sampling.new(text, { regex = regex })
      assert.same({}, problems)
      assert.is_nil(s:rule_for("/api/items"))
      assert.is_nil(s:offer(NGINX, exchange({ status = 500 })))
    end
  end)

  it("refuses ExtensionConfigJSON that is not JSON, and names the rules it leaves out", function()
    local s, err = sampling.new('{"NetworkSamplings":[', { regex = regex })
    assert.is_nil(s)
    assert.matches("not JSON", err)
    local problems
    s, problems = sampling.new('{"NetworkSamplings":[{"URIRegex":"("},{"When5xx":true},{"When4xx":true},3]}',
      { regex = regex })
    assert.is_true(s:rule_for("/").When5xx)
    assert.equal(3, #problems)
    assert.matches('URIRegex "%(": parentheses not balanced', problems[1])
    assert.matches("second rule without URIRegex", problems[2])
    assert.matches("rule 4 is not an object", problems[3])
  end)

  it("classifies 5xx, then 4xx, then slow, and only requests with an sw8 or b3 header", function()
    local s = sampler(DEFAULT)
    assert.equal("status_5xx", s:offer(NGINX, exchange({ status = 503, duration_ns = 500e6 })))
    assert.equal("status_4xx", s:offer(NGINX, exchange({ status = 404 })))
    assert.equal("slow", s:offer(NGINX, exchange({ duration_ns = 100e6 })))
    assert.is_nil(s:offer(NGINX, exchange({ duration_ns = 99.9e6 })))
    assert.equal("slow", s:offer(NGINX, exchange({ duration_ns = 200e6, trace_header = "b3" })))
    assert.equal("slow", s:offer(NGINX, exchange({ duration_ns = 200e6, trace_header = "x-b3-traceid" })))
    assert.is_nil(s:offer(NGINX, exchange({ duration_ns = 200e6, trace_header = "traceparent" })))
    assert.is_nil(s:offer(NGINX, exchange({ duration_ns = 200e6, trace_id = false, trace_header = false })))
  end)

  it("keeps a copy of each sampled exchange: the tracer may reuse the one offered", function()
    local s = sampler(DEFAULT)
    local ex = exchange({ status = 503 })
    s:offer(NGINX, ex)
    ex.status, ex.target = 200, "/later"
    local kept = s:take()[1].ex
    assert.same({ 503, "/api/items?id=3" }, { kept.status, kept.target })
  end)

  it("honours each flag of the rule: no MinDuration is no slow sampling", function()
    local s = sampler('{"NetworkSamplings":[{"When4xx":false,"When5xx":true}]}')
    assert.is_nil(s:offer(NGINX, exchange({ status = 404 })))
    assert.is_nil(s:offer(NGINX, exchange({ duration_ns = 60e9 })))
    assert.equal("status_5xx", s:offer(NGINX, exchange({ status = 500 })))
  end)

  it("chooses the last regex rule matching the path (query cut), else the default rule", function()
    local s = sampler('{"NetworkSamplings":['
      .. '{"URIRegex":"^/api/","MinDuration":10},'
      .. '{"URIRegex":"items$","MinDuration":1000},'
      .. '{"MinDuration":1}]}')
    assert.equal(1000, s:rule_for("/api/items").MinDuration)
    assert.equal(10, s:rule_for("/api/users").MinDuration)
    assert.equal(1, s:rule_for("/health").MinDuration)
    assert.is_nil(s:offer(NGINX, exchange({ duration_ns = 500e6 })))
    assert.equal("slow", s:offer(NGINX, exchange({ target = "/api/users?x=1", duration_ns = 500e6 })))
    -- the query is not part of the path the rules match
    assert.equal("slow", s:offer(NGINX, exchange({ target = "/api/items?id=3", duration_ns = 2000e6 })))
    assert.is_nil(s:offer(NGINX, exchange({ target = "/api/items?id=3", duration_ns = 500e6 })))
  end)

  it("samples nothing on a path no rule covers when there is no default rule", function()
    local s = sampler('{"NetworkSamplings":[{"URIRegex":"^/api/","When5xx":true}]}')
    assert.is_nil(s:offer(NGINX, exchange({ target = "/other", status = 500 })))
    assert.equal("status_5xx", s:offer(NGINX, exchange({ target = "/api/x", status = 500 })))
  end)

  it("keeps the 10 slowest of each process and kind per report, then starts again", function()
    local s = sampler(DEFAULT)
    for i = 1, 15 do
      s:offer(NGINX, exchange({ duration_ns = (100 + i) * 1e6 }))
    end
    s:offer(OTHER, exchange({ pid = OTHER.pid, duration_ns = 150e6 }))
    s:offer(NGINX, exchange({ status = 500 }))
    local taken = s:take()
    assert.equal(12, #taken)
    local nginx_slow = {}
    for _, t in ipairs(taken) do
      if t.member == NGINX and t.reason == "slow" then
        nginx_slow[#nginx_slow + 1] = t.latency
      end
    end
    assert.same({ 115, 114, 113, 112, 111, 110, 109, 108, 107, 106 }, nginx_slow)
    assert.equal("/api/items", taken[1].uri)
    assert.equal("skywalking", taken[1].provider)
    assert.same({}, s:take())
  end)
end)
