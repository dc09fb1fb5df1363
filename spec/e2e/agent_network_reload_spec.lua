-- End-to-end spec of hot reloads under the network tracer in `moonrover
-- agent`: a user script counts HTTP exchanges by target and status and hands
-- its counts over (agent.export / agent.imported) while its tracer hands
-- over the connections and the parsers' state. A python client keeps one
-- keep-alive connection busy through several reloads; at the end the counts
-- equal what was sent, no response is paired with the wrong request, and a
-- response still on its way at a reload makes one complete exchange.
local e2e = require("support.e2e")
local agent_run = require("support.agent_run")
local servers = require("support.servers")
local traced_services = require("support.traced_services")
local write = require("support.files").write

local it = require("support.skip").guard(it, pending, e2e.skip_reason())

-- The machine is shared: a flood of requests from another spec makes the
-- tracer's garbage outrun its collector for a while, and the default
-- memory budget would stop the scripts under test.
local AGENT_OPTIONS = "--network on --script-memory 1024"
local WAIT_S = 20
local PAIRS = 200        -- /a then /b, this many times
local PAUSE_S = "0.005"  -- between requests: the run outlasts several reloads
local RELOAD_AT = { 60, 160, 260 } -- responses read before each reload during the loop

-- Counts the exchanges with the spec's server (both sides: the client's
-- and the server's) by role, target, status and whether each is complete;
-- shows them as gauges, and its generation (1 + the reloads it went through).
local SCRIPT = [[
local agent = require("moonrover.agent")
local SERVER = "127.0.0.1:%d"

local state = agent.imported() or { generation = 0, counts = {} }
state.generation = state.generation + 1
agent.export(function() return state end)
agent.gauge("spec_generation", ""):set(state.generation)

local function show(role, target, status, complete, n)
  agent.gauge("spec_exchanges", "", { role = role, target = target, status = tostring(status),
    complete = tostring(complete) }):set(n)
end
for _, c in pairs(state.counts) do
  show(c[1], c[2], c[3], c[4], c[5])
end

agent.on("http", function(batch)
  for ex in batch:each() do
    local server_side = ex.role == "server" and ex["local"] or ex.remote
    if server_side == SERVER then
      local complete = ex.request_start_ns and ex.response_end_ns and not ex.error and true or false
      local key = table.concat({ ex.role, tostring(ex.target), ex.status, tostring(complete) }, " ")
      local c = state.counts[key] or { ex.role, tostring(ex.target), ex.status, complete, 0 }
      c[5] = c[5] + 1
      state.counts[key] = c
      show(c[1], c[2], c[3], c[4], c[5])
    end
  end
end)
]]

-- The spec_exchanges series on /metrics, as "role target status complete" -> value.
local function exchanges(agent)
  local seen = {}
  for labels, v in (agent:get("/metrics") or ""):gmatch("\nspec_exchanges({[^}]*}) (%S+)") do
    local l = {}
    for k, val in labels:gmatch('(%w+)="([^"]*)"') do
      l[k] = val
    end
    seen[table.concat({ l.role, l.target, l.status, l.complete }, " ")] = tonumber(v)
  end
  return seen
end

local function lines_of(path, prefix)
  local n = 0
  for line in (e2e.read_all(path) or ""):gmatch("[^\n]+") do
    if line:find(prefix, 1, true) == 1 then
      n = n + 1
    end
  end
  return n
end

describe("hot reloads under the network tracer (end to end)", function()
  local env = traced_services.each_test(before_each, after_each)

  it("hands connections and parsers over: counts exact, no mis-pairing, an answer in flight counted once", function()
    local http = servers.http_server(env.server, env.dir, { "/a=200", "/b=404", "/slow=200:1" })
    write(env.scripts .. "/counter.lua", SCRIPT:format(http.port))
    local agent = env:start(AGENT_OPTIONS)
    assert.is_truthy(agent.port, agent:log_text())
    local generation = 1
    local function reload()
      generation = generation + 1
      agent:signal("HUP")
      assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_generation") == generation end, WAIT_S),
        "reload " .. generation .. " did not happen (agent alive: " .. tostring(agent:alive()) .. ", exit status: " ..
        tostring(e2e.read_all(agent.exit_file)) .. "):\n" .. agent:log_tail())
    end
    assert.is_truthy(agent_run.wait_for(function() return agent:metric("spec_generation") == 1 end), agent:log_text())

    local progress, client_out = env.dir .. "/progress", env.dir .. "/client.out"
    local words = { servers.PYTHON, e2e.quote(servers.SUPPORT .. "/http_client.py"), http.port,
      e2e.quote(progress), "--pause", PAUSE_S }
    for _ = 1, PAIRS do
      words[#words + 1] = "/a /b"
    end
    words[#words + 1] = "/slow"
    local exit_file = env.dir .. "/client.exit"
    local command = table.concat(words, " ") .. "; echo $? >" .. e2e.quote(exit_file)
    local pid = env.client:start("sh -c " .. e2e.quote(command), client_out)
    assert.is_truthy(pid)
    for _, at in ipairs(RELOAD_AT) do
      assert.is_truthy(agent_run.wait_for(function() return lines_of(progress, "done ") >= at end, WAIT_S),
        e2e.read_all(client_out))
      reload()
    end
    -- The last request waits a second for its answer: reload meanwhile.
    assert.is_truthy(agent_run.wait_for(function() return lines_of(progress, "sent ") == 2 * PAIRS + 1 end,
      WAIT_S), e2e.read_all(client_out))
    reload()
    assert.is_truthy(agent_run.wait_for(function() return e2e.read_all(exit_file) end, WAIT_S))
    assert.equal("0\n", e2e.read_all(exit_file), e2e.read_all(client_out))

    local want = {
      ["client /a 200 true"] = PAIRS, ["client /b 404 true"] = PAIRS, ["client /slow 200 true"] = 1,
      ["server /a 200 true"] = PAIRS, ["server /b 404 true"] = PAIRS, ["server /slow 200 true"] = 1,
    }
    local seen
    agent_run.wait_for(function()
      seen = exchanges(agent)
      return require("luassert.util").deepcompare(seen, want)
    end, WAIT_S)
    assert.same(want, seen, agent:log_tail())
    assert.equal(0, agent:metric('moonrover_scripts{state="disabled"}'))
  end)
end)
