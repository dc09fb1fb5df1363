-- Specs for continuous profiling's policies and check types: what OAP's
-- ServiceWithPolicyJSON holds, Rover's validation of each item (one line per
-- bad item, the rest kept), threshold parsing per check type, and a check
-- type added in Lua.
local checkers = require("moonrover.rover.continuous.checkers")
local policy = require("moonrover.rover.continuous.policy")

-- A regex compiler for the specs: Lua patterns stand in for the runtime's
-- regular expressions (the agent passes moonrover's compiled ones).
local function compile(pattern)
  if pattern:find("%[$") then
    return nil, "unterminated ["
  end
  return { match = function(_, s) return s:find(pattern) and { s } or nil end }
end

local function parse(json)
  return policy.parse(json, checkers.new(), compile)
end

local ONE = [[
[{"ServiceName":"shop","UUID":"u-1","Profiling":{
  "ON_CPU":{"PROCESS_CPU":{"Threshold":"50","Period":5,"Count":3},
            "PROCESS_THREAD_COUNT":{"Threshold":"100","Period":10,"Count":2}},
  "NETWORK":{"HTTP_ERROR_RATE":{"Threshold":"10.5","Period":6,"Count":2,"URIList":["/pay","/cart"]},
             "HTTP_AVG_RESPONSE_TIME":{"Threshold":"200","Period":4,"Count":4,"URIRegex":"^/api"}}}}]
]]

describe("policy.parse", function()
  it("reads services, targets and items as OAP's Gson writes them", function()
    local services, problems = parse(ONE)
    assert.same({}, problems)
    assert.same(1, #services)
    local s = services[1]
    assert.same("shop", s.service)
    assert.same("u-1", s.uuid)
    assert.same({ "ON_CPU", "NETWORK" }, { s.policies[1].target, s.policies[2].target })
    local cpu = s.policies[1].items[1]
    assert.same({ "PROCESS_CPU", 50, 5, 3 }, { cpu.type, cpu.threshold, cpu.period, cpu.count })
    assert.same("process_cpu", cpu.checker.meter)
    local latency, errors = s.policies[2].items[1], s.policies[2].items[2]
    assert.same("HTTP_AVG_RESPONSE_TIME", latency.type)
    assert.same("^/api", latency.uri_regex)
    assert.is_not_nil(latency.matcher:match("/api/x"))
    assert.same({ "/pay", "/cart" }, errors.uri_list)
    assert.same(10.5, errors.threshold)
  end)

  it("reads a deleted policy (empty UUID, no Profiling) as a service without policies", function()
    local services = parse('[{"ServiceName":"shop","UUID":""}]')
    assert.same({ { service = "shop", uuid = "", policies = {} } }, services)
    assert.same("50", parse(ONE)[1].profiling.ON_CPU.PROCESS_CPU.Threshold)
  end)

  it("leaves out each bad item with a line naming it, and keeps the others", function()
    local services, problems = parse([[
[{"ServiceName":"s","UUID":"u","Profiling":{"ON_CPU":{
  "PROCESS_CPU":{"Threshold":"80.5","Period":5,"Count":3},
  "PROCESS_THREAD_COUNT":{"Threshold":"","Period":5,"Count":3},
  "SYSTEM_LOAD":{"Threshold":"2","Period":5,"Count":6},
  "HTTP_ERROR_RATE":{"Threshold":"x","Period":5,"Count":1},
  "HTTP_AVG_RESPONSE_TIME":{"Threshold":"100","Period":0,"Count":0},
  "DISK_FULL":{"Threshold":"1","Period":1,"Count":1}},
 "OFF_CPU":{"HTTP_ERROR_RATE":{"Threshold":"5","Period":3,"Count":1,"URIRegex":"(["}},
 "GPU":{}}}]
]])
    assert.same({}, services[1].policies)
    assert.same({
      "service s, ON_CPU, DISK_FULL: unknown check type",
      "service s, ON_CPU, HTTP_AVG_RESPONSE_TIME: Period must be a positive number of seconds, not 0",
      'service s, ON_CPU, HTTP_ERROR_RATE: Threshold "x" is not a number',
      'service s, ON_CPU, PROCESS_CPU: Threshold "80.5" is not a 32-bit integer',
      "service s, ON_CPU, PROCESS_THREAD_COUNT: Threshold is empty",
      "service s, ON_CPU, SYSTEM_LOAD: Count must be between 1 and Period (5), not 6",
      'service s, OFF_CPU, HTTP_ERROR_RATE: URIRegex "([" does not compile: unterminated [',
      "service s: unknown profiling target GPU",
    }, problems)
  end)

  it("refuses a Period or Count that is not a whole number", function()
    local _, problems = parse('[{"ServiceName":"s","UUID":"u","Profiling":{"ON_CPU":{'
      .. '"PROCESS_CPU":{"Threshold":"50","Period":5.5,"Count":3}}}}]')
    assert.same({ "service s, ON_CPU, PROCESS_CPU: Period must be a positive number of seconds, not 5.5" }, problems)
  end)

  it("says what is wrong with text that is not a list of services", function()
    local services, problems = parse("{not json")
    assert.is_nil(services)
    assert.matches("^ServiceWithPolicyJSON is not JSON: ", problems[1])
    assert.same({ "ServiceWithPolicyJSON is not a list of services" }, select(2, parse('{"a":"b"}')))
    assert.same({ "ServiceWithPolicyJSON item 1 has no ServiceName" }, select(2, parse('[{"UUID":"u"}]')))
  end)

  it("reads policies written in Lua, numbers included", function()
    local problems = {}
    local policies = policy.read_profiling("s", { OFF_CPU = { SYSTEM_LOAD = { Threshold = 1.5, Period = 3,
      Count = 2 } } }, checkers.new(), compile, problems)
    assert.same({}, problems)
    assert.same(1.5, policies[1].items[1].threshold)
  end)
end)

describe("checkers", function()
  it("reads thresholds as Rover does", function()
    assert.same(80, checkers.integer("80"))
    assert.same(-3, checkers.integer("-3"))
    assert.is_nil(checkers.integer("80.5"))
    assert.is_nil(checkers.integer("99999999999"))
    assert.same(0.25, checkers.number("0.25"))
    assert.same(1000, checkers.number("1e3"))
    assert.is_nil(checkers.number("inf"))
    assert.is_nil(checkers.number(" 1"))
  end)

  it("computes Rover's five values from samples and HTTP seconds", function()
    local reg = checkers.new()
    assert.same(75, reg:get("PROCESS_CPU").value({ cpu = 0.75 }))
    assert.is_nil(reg:get("PROCESS_CPU").value({ cpu = nil, threads = 3 }))
    assert.same(12, reg:get("PROCESS_THREAD_COUNT").value({ threads = 12 }))
    assert.same(1.5, reg:get("SYSTEM_LOAD").value(nil, { load1 = 1.5 }))
    assert.same(25, reg:get("HTTP_ERROR_RATE").value({ count = 4, errors = 1, latency_ms = 10 }))
    assert.same(2.5, reg:get("HTTP_AVG_RESPONSE_TIME").value({ count = 4, errors = 1, latency_ms = 10 }))
  end)

  it("takes a check type written in Lua, and refuses a malformed one", function()
    local reg = checkers.new()
    assert.is_true(reg:add("PROCESS_RSS", { scope = "process", meter = "process_rss_mb", cause = "ProcessThreadCount",
      threshold = checkers.number, value = function(s) return s.rss_bytes / 1048576 end }))
    assert.same(512, reg:get("PROCESS_RSS").value({ rss_bytes = 512 * 1048576 }))
    local services = policy.parse('[{"ServiceName":"s","UUID":"u","Profiling":{"ON_CPU":{"PROCESS_RSS":'
      .. '{"Threshold":"256","Period":2,"Count":1}}}}]', reg, compile)
    assert.same("PROCESS_RSS", services[1].policies[1].items[1].type)
    assert.matches("cause must be one of", select(2, reg:add("X", { scope = "process", meter = "x",
      cause = "Memory", threshold = checkers.number, value = tostring })))
    assert.matches("scope must be", select(2, reg:add("X", { scope = "disk" })))
    assert.matches("upper case", select(2, reg:add("rss", {})))
  end)
end)

describe("the continuous_policies.lua example of docs/rover-compatibility.md", function()
  local DOC = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/docs/rover-compatibility.md"

  local function example()
    local text = assert(io.open(DOC)):read("*a")
    return assert(text:match("```lua\n(%-%- continuous_policies%.lua.-)```"), "no continuous_policies.lua example")
  end

  it("adds its check type and a policy that reads with it", function()
    local m = assert(loadstring(example(), "=continuous_policies.lua"))()
    local reg = checkers.new()
    m.checkers(reg)
    local problems = {}
    local policies = policy.read_profiling("orders", m.policies.orders, reg, compile, problems)
    assert.same({}, problems)
    local item = policies[1].items[1]
    assert.same({ "ON_CPU", "PROCESS_RSS_MB", 512, 10, 5 }, { policies[1].target, item.type, item.threshold,
      item.period, item.count })
    assert.same(600, item.checker.value({ rss_bytes = 600 * 1048576 }))
  end)
end)
