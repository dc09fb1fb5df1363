-- Specs for how NETWORK tasks reach OAP: one subscription to the agent's
-- network streams shared by the running tasks, and the sender's streams of
-- meters, logs and span events at each report, a finished task's last
-- report included.
local runner = require("moonrover.rover.network_task.runner")
local sender = require("moonrover.rover.network_task.sender")
local streams = require("moonrover.rover.network_task.streams")

local NGINX = { pid = 100, id = "p-nginx", entity = { layer = "OS_LINUX", serviceName = "web", instanceName = "host-1",
  processName = "nginx" } }
local SAMPLE_SLOW = '{"NetworkSamplings":[{"MinDuration":100,"Settings":{"RequireCompleteRequest":true}}]}'

local function exchange(duration_ns)
  return { protocol = "http", method = "GET", target = "/", version = "1.1", status = 200, request_bytes = 100,
    response_bytes = 300, request_start_ns = 1e9, request_end_ns = 1e9, response_start_ns = 1e9,
    response_end_ns = 1e9 + duration_ns, duration_ns = duration_ns, pid = NGINX.pid, role = "server",
    ["local"] = "10.0.0.5:80", remote = "10.0.0.9:5000", conn = 1, trace_id = "t", trace_header = "sw8",
    trace_value = "1-dA==-cw==-1-x-x-x-x" }
end

-- An agent.on that records the subscriptions and can play batches.
local function fake_agent(refuse)
  local handlers, count = {}, 0
  return {
    on = function(stream, fn)
      if refuse then
        error("lua/x.lua:3: the network tracer is off (--network off)", 2)
      end
      count = count + 1
      handlers[stream] = fn
    end,
    play = function(stream, events) handlers[stream]({ events = events, n = #events }) end,
    subscriptions = function() return count end,
  }
end

local function setup()
  local agent, calls = fake_agent(), {}
  local hub = streams.new(agent.on)
  local s = sender.new({
    stream = function(rpc, request_type, messages)
      calls[#calls + 1] = { rpc = rpc, type = request_type, messages = messages }
    end,
    now_ms = function() return 1700000000000 end,
    monotonic_ns = function() return 5e9 end,
  })
  local function task(id, json)
    return assert(runner.new({ id = id, target = "NETWORK", process_ids = { "p-nginx" }, extension_json = json },
      { NGINX }, { prefix = "rover_net_p", streams = hub, sender = s, log = function() end,
        regex = function() return nil, "unused" end }))
  end
  return agent, calls, s, task
end

describe("rover network sending", function()
  it("subscribes once for every task, and hands each batch to the tasks listening", function()
    local agent, calls, s, task = setup()
    local a, b = task("a"), task("b")
    assert(a:start())
    assert(b:start())
    assert.equal(2, agent.subscriptions())
    agent.play("http", { exchange(1e6) })
    b:stop()
    agent.play("http", { exchange(1e6) })
    s:send()
    assert.equal(1, #calls)
    local counts = {}
    for _, c in ipairs(calls[1].messages) do
      for _, m in ipairs(c.meterData) do
        if m.singleValue and m.singleValue.name == "rover_net_p_http1_request_counter" then
          counts[#counts + 1] = m.singleValue.value
        end
      end
    end
    table.sort(counts)
    assert.same({ 1, 2 }, counts)
  end)

  it("sends meters, logs and span events as three streams, only when there is something to send", function()
    local agent, calls, s, task = setup()
    local t = task("a", SAMPLE_SLOW)
    assert(t:start())
    s:send()
    assert.same({}, calls)
    agent.play("http", { exchange(150e6), exchange(1e6) })
    s:send()
    assert.same({ "collectMeterBatch", "collectLogs", "collectSpanEvents" }, { calls[1].rpc, calls[2].rpc,
      calls[3].rpc })
    assert.same({ "skywalking.v3.MeterDataCollection", "skywalking.v3.LogData", "skywalking.v3.SpanAttachedEvent" },
      { calls[1].type, calls[2].type, calls[3].type })
    assert.equal(1, #calls[2].messages)
    assert.same({ seconds = 1699999996, nanos = 0 }, calls[3].messages[1].startTime)
  end)

  it("sends a finished task's last report with the next one, and forgets the task", function()
    local agent, calls, s, task = setup()
    local t = task("a")
    assert(t:start())
    agent.play("http", { exchange(1e6) })
    t:stop()
    t:close()
    t:close()
    s:send()
    assert.equal(1, #calls)
    s:send()
    assert.equal(1, #calls)
  end)

  it("hands what it has not sent to the next version, which sends it first", function()
    local agent, calls, s, task = setup()
    local t = task("a", SAMPLE_SLOW)
    assert(t:start())
    agent.play("http", { exchange(150e6) })
    local state = s:hand_over()
    s:send()
    assert.same({}, calls, "handed over, so not sent by the old version")
    local _, next_calls, next_sender = setup()
    next_sender:take_over(state)
    next_sender:send()
    assert.same({ "collectMeterBatch", "collectLogs", "collectSpanEvents" }, { next_calls[1].rpc, next_calls[2].rpc,
      next_calls[3].rpc })
    assert.equal(1, #next_calls[2].messages)
  end)

  it("refuses to start a task when the agent has no network tracer", function()
    local hub = streams.new(fake_agent(true).on)
    local t = assert(runner.new({ id = "a", target = "NETWORK", process_ids = { "p" } }, { NGINX },
      { prefix = "p", streams = hub, sender = sender.new({}), log = function() end }))
    local ok, err = t:start()
    assert.is_nil(ok)
    assert.equal("no network tracer: the network tracer is off (--network off)", err)
  end)

  it("splits the wall clock's lead over the monotonic one in seconds and nanoseconds", function()
    assert.same({ seconds = 1699999995, nanos = 250000000 - 500 }, sender.clock(1700000000250, 5e9 + 500))
  end)
end)
