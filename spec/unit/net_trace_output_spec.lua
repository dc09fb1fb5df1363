-- net_trace_output_spec.lua - the lines `moonrover trace` writes for an
-- exchange (the JSON contract) and its summary.
local trace_output = require("moonrover.net.trace_output")

local clock = { wall_ns_at = function(ns) return 1700000000e9 + ns end }

local function exchange(fields)
  local ex = { protocol = "http", pid = 7, comm = "nginx", role = "server", ["local"] = "127.0.0.1:8080",
    remote = "127.0.0.1:40000", tls = false, method = "GET", target = "/a", status = 200,
    request_start_ns = 1500, response_end_ns = 2501500, duration_ns = 2500000, request_bytes = 40,
    response_bytes = 300 }
  for k, v in pairs(fields or {}) do
    ex[k] = v
  end
  return ex
end

describe("trace output", function()
  it("writes an exchange as one JSON object with the documented keys in order", function()
    local line = trace_output.line(trace_output.new("json", clock), exchange({ trace_id = "ab" }))
    assert.equal('{"ts":"2023-11-14T22:13:20.000001Z","pid":7,"comm":"nginx","role":"server",' ..
      '"local":"127.0.0.1:8080","remote":"127.0.0.1:40000","protocol":"http","method":"GET","target":"/a",' ..
      '"status":200,"duration_ms":2.5,"request_bytes":40,"response_bytes":300,"tls":false,"trace_id":"ab"}\n',
      line)
  end)

  it("leaves out the request's fields of a response whose request was not seen", function()
    local ex = exchange({ response_start_ns = 2000 })
    ex.method, ex.target, ex.request_start_ns, ex.duration_ns, ex.request_bytes = nil, nil, nil, nil, nil
    local line = trace_output.line(trace_output.new("json", clock), ex)
    assert.equal('{"ts":"2023-11-14T22:13:20.000002Z","pid":7,"comm":"nginx","role":"server",' ..
      '"local":"127.0.0.1:8080","remote":"127.0.0.1:40000","protocol":"http","status":200,' ..
      '"response_bytes":300,"tls":false}\n', line)
  end)

  it("counts exchanges by status, incomplete ones by their error whatever their status", function()
    local tally = {}
    trace_output.count(tally, exchange())
    trace_output.count(tally, exchange())
    trace_output.count(tally, exchange({ status = 0, error = "no response" }))
    trace_output.count(tally, exchange({ error = "closed mid-response" }))
    assert.equal("moonrover trace: 2.0 s\n  http: 4 exchange(s): 200 x2, closed mid-response x1, no response x1\n" ..
      "  lost: gaps: 1\n", trace_output.summary(tally, 2, { { reason = "gaps", n = 1 }, { reason = "x", n = 0 } }))
  end)
end)
