-- End-to-end specs for the Rover ON_CPU / OFF_CPU task runner: real BPF on
-- real workloads, checked as the messages OAP would receive, encoded and
-- decoded with the SkyWalking descriptors.
local e2e = require("support.e2e")
local runner = require("moonrover.rover.cpu_runner")
local protobuf = require("moonrover.lib.protobuf")
local oap_client = require("moonrover.rover.oap_client")

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

local function schema()
  return assert(oap_client.schema())
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
    os.execute("sleep 1")
    local first = r:collect()
    os.execute("sleep 1")
    local second = r:collect()
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
          assert.same("__libc_start_call_main", st.stackSymbols[#st.stackSymbols])
        end
      end
    end
    assert.is_true(total > 100, "samples: " .. total)
    assert.is_truthy(leaves.burn_alpha)
    assert.is_truthy(leaves.burn_beta)
    assert.is_true(#second > 0, "the second collect has its own deltas")
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
