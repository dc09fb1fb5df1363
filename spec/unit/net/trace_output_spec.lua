-- net_trace_output_spec.lua - the lines `moonrover trace` writes for an
-- exchange (the JSON contract, the text columns, escaped) and its summary
-- (statuses, latency percentiles).
local trace_order = require("moonrover.net.trace_order")
local trace_output = require("moonrover.net.trace_output")

local clock = { wall_ns_at = function(ns) return 1700000000e9 + ns end }

local function exchange(fields)
  local ex = { protocol = "http", pid = 7, tid = 8, comm = "nginx", role = "server", ["local"] = "127.0.0.1:8080",
    remote = "127.0.0.1:40000", tls = false, method = "GET", target = "/a", status = 200,
    request_start_ns = 1500, response_end_ns = 2501500, duration_ns = 2500000, request_bytes = 40,
    response_bytes = 300 }
  for k, v in pairs(fields or {}) do
    ex[k] = v
  end
  return ex
end

-- The line trace_output holds for ex, as a flush writes it.
local function line_of(out, ex)
  local text
  local order = trace_order.new(function(t) text = t end)
  trace_output.add(out, order, ex)
  order:flush()
  return text
end

describe("trace output", function()
  it("writes an exchange as one JSON object with the documented keys in order", function()
    local ex = exchange({ trace_id = "ab", host = "example.com", container_id = "/system.slice/nginx.service" })
    local line = line_of(trace_output.new("json", clock), ex)
    assert.equal('{"ts":"2023-11-14T22:13:20.000001Z","pid":7,"tid":8,"comm":"nginx",' ..
      '"container_id":"/system.slice/nginx.service","role":"server",' ..
      '"local":"127.0.0.1:8080","remote":"127.0.0.1:40000","protocol":"http","method":"GET","target":"/a",' ..
      '"host":"example.com","status":200,"duration_ms":2.5,"request_bytes":40,"response_bytes":300,"tls":false,' ..
      '"trace_id":"ab"}\n',
      line)
  end)

  it("leaves out the request's fields of a response whose request was not seen", function()
    local ex = exchange({ response_start_ns = 2000 })
    ex.method, ex.target, ex.request_start_ns, ex.duration_ns, ex.request_bytes = nil, nil, nil, nil, nil
    local line = line_of(trace_output.new("json", clock), ex)
    assert.equal('{"ts":"2023-11-14T22:13:20.000002Z","pid":7,"tid":8,"comm":"nginx","role":"server",' ..
      '"local":"127.0.0.1:8080","remote":"127.0.0.1:40000","protocol":"http","status":200,' ..
      '"response_bytes":300,"tls":false}\n', line)
  end)

  it("leaves out a container id that is not known or not measured, and a missing Host", function()
    local out = trace_output.new("json", clock)
    for _, id in ipairs({ false, "nil" }) do
      local ex = exchange({ container_id = id, host = false })
      if id == "nil" then
        ex.container_id = nil
      end
      local line = line_of(out, ex)
      assert.is_nil(line:find('"container_id"', 1, true))
      assert.is_nil(line:find('"host"', 1, true))
    end
  end)

  it("writes valid UTF-8 JSON whatever bytes came off the wire", function()
    local ex = exchange({ target = "/\255\254\128\"\1x\195\169", host = "h\192", comm = "n\237\160\128" })
    local line = line_of(trace_output.new("json", clock), ex)
    local R = "\239\191\189"
    assert.is_truthy(line:find('"target":"/' .. R .. R .. R .. '\\"\\u0001x\195\169"', 1, true), line)
    assert.is_truthy(line:find('"host":"h' .. R .. '"', 1, true), line)
    assert.is_truthy(line:find('"comm":"n' .. R .. R .. R .. '"', 1, true), line)
  end)

  it("writes text columns with their units in the header", function()
    local out = trace_output.new("text", clock)
    assert.matches("^TIME +PID COMM +ROLE +LOCAL +REMOTE +PROTO METHOD  STATUS +DUR_MS +REQ_B +RESP_B  TARGET\n$",
      trace_output.header(out))
    assert.matches("^22:13:20%.000 +7 nginx +server 127%.0%.0%.1:8080 +127%.0%.0%.1:40000 +http +GET +200 +2%.500 " ..
      "+40 +300  /a\n$", line_of(out, exchange()))
  end)

  it("escapes terminal controls and bytes that are not UTF-8 in text, as JSON does", function()
    local out = trace_output.new("text", clock)
    local line = line_of(out, exchange({ target = "/\27]0;X\7\rfake\255", comm = "a\27[2J" }))
    assert.is_truthy(line:find(" a\\x1b[2J ", 1, true))
    assert.matches("  /\\x1b]0;X\\x07\\x0dfake\\xff\n$", line)
    assert.is_nil(line:sub(1, -2):find("%c"))
  end)

  it("counts exchanges by status, incomplete ones by their error whatever their status", function()
    local tally = trace_output.tally()
    trace_output.count(tally, exchange())
    trace_output.count(tally, exchange())
    trace_output.count(tally, exchange({ status = 0, error = "no response", duration_ns = false }))
    trace_output.count(tally, exchange({ error = "closed mid-response" }))
    local summary = trace_output.summary(tally, 2, { { reason = "gaps", n = 1 }, { reason = "x", n = 0 } })
    assert.matches("^moonrover trace: 2%.0 s\n  http: 4 exchange%(s%): 200 x2, closed mid%-response x1, no response " ..
      "x1\n", summary)
    assert.matches("\n  lost: gaps: 1\n$", summary)
  end)

  it("gives the count, how many were measured and p50/p90/p99 per protocol and status class", function()
    local tally = trace_output.tally()
    for i = 1, 100 do
      trace_output.count(tally, exchange({ duration_ns = i * 1e6 }))
    end
    trace_output.count(tally, exchange({ status = 404, duration_ns = 3e6 }))
    trace_output.count(tally, exchange({ status = 0, error = "no response", duration_ns = false }))
    trace_output.count(tally, exchange({ status = 404, duration_ns = false }))
    local summary = trace_output.summary(tally, 1, {})
    assert.matches("\n  latency +count +measured +p50_ms +p90_ms +p99_ms\n", summary)
    local p50, p90, p99 = summary:match("\n  http 2xx +100 +100 +([%d.]+) +([%d.]+) +([%d.]+)\n")
    assert.is_true(math.abs(tonumber(p50) - 50) < 0.5 and math.abs(tonumber(p90) - 90) < 0.9 and
      math.abs(tonumber(p99) - 99) < 1, summary)
    assert.matches("\n  http 4xx +2 +1 +3%.%d+ +3%.%d+ +3%.%d+\n", summary)
    assert.matches("\n  http error +1 +0 +%- +%- +%-\n", summary)
  end)

  it("adds the notes given before the losses", function()
    assert.equal("moonrover trace: 1.0 s\n  no exchange seen\n  3 process(es) followed\n  lost: nothing\n",
      trace_output.summary(trace_output.tally(), 1, {}, { "3 process(es) followed" }))
  end)

  it("says when no exchange was seen", function()
    assert.equal("moonrover trace: 1.0 s\n  no exchange seen\n  lost: nothing\n",
      trace_output.summary(trace_output.tally(), 1, {}))
  end)
end)
