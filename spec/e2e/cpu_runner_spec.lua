-- End-to-end specs for the Rover ON_CPU / OFF_CPU task runner: real BPF on
-- real workloads, checked as the messages OAP would receive, encoded and
-- decoded with the SkyWalking descriptors.
local clock = require("support.clock")
local e2e = require("support.e2e")
local runner = require("moonrover.rover.cpu_runner")
local protobuf = require("moonrover.lib.protobuf")
local oap_client = require("moonrover.rover.oap_client")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local function schema()
  return assert(oap_client.schema())
end

-- The ON_CPU case takes samples until it has MIN_SAMPLES, not for a fixed
-- time: the workload's share of the CPU decides how fast they come. Among
-- 100, burn_beta (a quarter of the workload's CPU time) is missing with a
-- chance of 0.75^100, about 3e-13.
local MIN_SAMPLES = 100
-- 100 samples at 499 Hz are 0.2 s of the workload's CPU time. Beside a busy
-- loop per core and other test suites it got 73 to 89 samples a second;
-- 30 s leave room for a share 40 times smaller than that.
local SAMPLE_LIMIT_S = 30

-- Collects from the ON_CPU runner r until the messages count at least
-- `samples` samples or SAMPLE_LIMIT_S passed; returns the messages.
local function collect_samples(r, samples)
  local messages, total = {}, 0
  clock.wait_for(function()
    for _, m in ipairs(r:collect()) do
      messages[#messages + 1] = m
      total = total + m.onCPU.dumpCount
    end
    return total >= samples
  end, SAMPLE_LIMIT_S)
  return messages
end

local function task(target)
  return { id = "t", target = target, trigger = "FIXED_TIME", process_ids = { "p" }, duration_ms = 60000,
    start_time = 0, update_time = 0 }
end

describe("Rover CPU task runner (end to end)", function()
  local pid

  after_each(function()
    e2e.kill(pid)
  end)

  it("sends the workload's hot functions leaf first, with dump counts that add up", function()
    pid = e2e.spawn("cpu_ratio", "30")
    local r = assert(runner.new(task("ON_CPU"), { pid }, { frequency = 499 }))
    assert(r:start())
    local first = collect_samples(r, MIN_SAMPLES)
    local second = collect_samples(r, 1)
    r:stop()
    r:close()
    local sw = schema()
    local leaves, total = {}, 0
    for _, m in ipairs(first) do
      local back = assert(protobuf.decode(sw, "skywalking.v3.EBPFProfilingData",
        assert(protobuf.encode(sw, "skywalking.v3.EBPFProfilingData", m))))
      total = total + back.onCPU.dumpCount
      for _, st in ipairs(back.onCPU.stacks) do
        if st.stackType == 1 then
          leaves[st.stackSymbols[1]] = (leaves[st.stackSymbols[1]] or 0) + back.onCPU.dumpCount
          assert.same("_start", st.stackSymbols[#st.stackSymbols]) -- the whole chain, by CFI
        end
      end
    end
    assert.is_true(total >= MIN_SAMPLES, string.format("%d samples in %d s", total, SAMPLE_LIMIT_S))
    assert.is_truthy(leaves.burn_alpha)
    assert.is_truthy(leaves.burn_beta)
    assert.is_true(#second > 0, "a later collect has its own deltas")
  end)

  it("reports switch counts and blocked time for an OFF_CPU task", function()
    pid = e2e.spawn("sleeper", "30")
    local r = assert(runner.new(task("OFF_CPU"), { pid }))
    assert(r:start())
    os.execute("sleep 1")
    local messages = r:collect()
    r:stop()
    r:close()
    local switches, nanos, seen = 0, 0, false
    for _, m in ipairs(messages) do
      switches = switches + m.offCPU.switchCount
      nanos = nanos + m.offCPU.duration
      for _, st in ipairs(m.offCPU.stacks) do
        if st.stackType == 1 and st.stackSymbols[1] == "nap_in_known_function" then
          seen = true
        end
      end
    end
    assert.is_true(switches > 0)
    assert.is_true(nanos > 0)
    assert.is_true(seen)
  end)
end)
