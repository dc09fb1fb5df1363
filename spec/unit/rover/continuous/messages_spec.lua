-- Specs for the OAP messages of continuous profiling: the policy query, the
-- report of a trigger (causes per check type, the target task, NETWORK's
-- sampled URIs) and the meter collections of a check.
local checkers = require("moonrover.rover.continuous.checkers")
local messages = require("moonrover.rover.continuous.messages")

local reg = checkers.new()
local main = { service = "shop", instance = "i1", name = "python3", layer = "GENERAL" }

describe("continuous messages", function()
  it("asks for each service's policy with the UUID last seen", function()
    assert.same({ policies = { { serviceName = "shop", uuid = "u1" }, { serviceName = "cart", uuid = "" } } },
      messages.policy_query({ { service = "shop", uuid = "u1" }, { service = "cart" } }))
  end)

  it("reports an ON_CPU trigger with a single-value cause", function()
    local trigger = { target = "ON_CPU", main = main, causes = { { checker = reg:get("PROCESS_CPU"), threshold = 50,
      current = 97.5 } } }
    assert.same({ layer = "GENERAL", serviceName = "shop", instanceName = "i1", processName = "python3",
      duration = 600, onCPU = {}, causes = { { type = 0, singleValue = { threshold = 50, current = 97.5 } } } },
      messages.report(trigger, 600))
  end)

  it("reports a NETWORK trigger with URI causes and the URIs to sample", function()
    local rate = reg:get("HTTP_ERROR_RATE")
    local causes = { { checker = rate, threshold = 10, current = 50, path = "/pay" },
      { checker = reg:get("HTTP_AVG_RESPONSE_TIME"), threshold = 100, current = 300, regex = "^/api" } }
    local r = messages.report({ target = "NETWORK", main = main, causes = causes, all_causes = causes }, 60)
    assert.same({ samplingURIRegexes = { "/pay", "^/api" } }, r.network)
    assert.same({ type = 3, uri = { path = "/pay", threshold = 10, current = 50 } }, r.causes[1])
    assert.same({ type = 4, uri = { regex = "^/api", threshold = 100, current = 300 } }, r.causes[2])
    assert.same('{"NetworkSamplings":[{"URIRegex":"/pay","MinDuration":0,"When4xx":true,"When5xx":true,'
      .. '"Settings":{"RequireCompleteRequest":true,"MaxRequestSize":-1,"RequireCompleteResponse":true,'
      .. '"MaxResponseSize":-1}},{"URIRegex":"^/api","MinDuration":0,"When4xx":true,"When5xx":true,"Settings":'
      .. '{"RequireCompleteRequest":true,"MaxRequestSize":-1,"RequireCompleteResponse":true,"MaxResponseSize":-1}}]}',
      messages.network_extension(causes))
    causes[3] = { checker = rate, threshold = 10, current = 20, regex = "" }
    assert.same({ "" }, messages.sampling_uris(causes))
  end)

  it("groups meters per service instance, each with its service, instance and timestamp", function()
    local cols = messages.meter_collections({
      { service = "shop", instance = "i1", name = "process_cpu", value = 70,
        labels = { process_name = "python3", layer = "GENERAL" } },
      { service = "shop", instance = "i2", name = "http_error_rate", value = 5,
        labels = { process_name = "python3", layer = "GENERAL", uri = "global" } },
      { service = "shop", instance = "i1", name = "process_thread_count", value = 4,
        labels = { process_name = "python3", layer = "GENERAL" } },
    }, "rover_con_p", 1700000000000)
    assert.same(2, #cols)
    assert.same(2, #cols[1].meterData)
    assert.same({ singleValue = { name = "rover_con_p_process_cpu", value = 70, labels = {
      { name = "process_name", value = "python3" }, { name = "layer", value = "GENERAL" } } },
      service = "shop", serviceInstance = "i1", timestamp = 1700000000000 }, cols[1].meterData[1])
    assert.same({ name = "uri", value = "global" }, cols[2].meterData[1].singleValue.labels[3])
  end)
end)
