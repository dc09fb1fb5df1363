-- Specs for kube_discovery.lua: the Kubernetes finder's scans in the Rover drop-in,
-- over a fake agent (timers run by hand), a fake client and a fake pod index.
local fake_pod_index = require("support.fake_pod_index")
local fake_proc_facts = require("support.fake_proc_facts")
local kube_discovery = require("moonrover.rover.kube_discovery")

local CART_ID, LATER_ID = ("c"):rep(64), ("e"):rep(64)
local EXEC, EXIT = 1, 2

local ANALYZERS = { { active = true, filters = { ".Pod.HasServiceName" }, layer = "K8S_SERVICE",
  service_name = "{{.Pod.ServiceName}}.{{.Pod.Namespace}}", instance_name = "{{.Pod.Name}}",
  process_name = "{{.Process.ExeName}}", labels = "k8s-service" } }

-- An agent whose timers and stream handlers are kept to be run by the spec.
local function fake_agent()
  local agent = { EXEC = EXEC, timers = {}, handlers = {}, gauges = {}, warnings = {} }
  agent.log = { warn = function(fmt, ...) agent.warnings[#agent.warnings + 1] = string.format(fmt, ...) end }
  function agent.gauge(name)
    local g = { set = function(self, v) self.value = v end }
    agent.gauges[name] = g
    return g
  end
  function agent.after(seconds, fn) agent.timers[#agent.timers + 1] = { seconds, fn } end
  agent.every = agent.after
  function agent.on(stream, fn) agent.handlers[stream] = fn end
  -- Runs the timers of that period once.
  function agent.tick(seconds)
    for _, t in ipairs(agent.timers) do
      if t[1] == seconds then
        t[2]()
      end
    end
  end
  -- Delivers process events { kind, pid }.
  function agent.events(list)
    agent.handlers.process({ each = function()
      local i = 0
      return function()
        i = i + 1
        return list[i] and { kind = list[i][1], pid = list[i][2] }
      end
    end })
  end
  return agent
end

local function cart_pod(index, id, name)
  local pod = index:add(fake_pod_index.pod({ name = name, namespace = "shop",
    containers = { { name = "cart", id = id } } }))
  index:set_service(pod, "cart")
  return pod
end

local function pids(list)
  local out = {}
  for i, p in ipairs(list) do
    out[i] = p.pid
  end
  return out
end

describe("kube_discovery", function()
  local procs, index, agent, kd, changes, feed

  before_each(function()
    procs = {
      [300] = { cgroup = fake_proc_facts.cgroup_v2(CART_ID), cmdline = "/app/cart", comm = "cart", exe = "/app/cart",
        start = 7e9 },
    }
    index = fake_pod_index.new()
    cart_pod(index, CART_ID, "cart-1")
    feed = {}
    -- The finder's own modules load the real pod index: the fakes replace it
    -- for kube_discovery's require at start.
    package.loaded["moonrover.kube.client"], package.loaded["moonrover.kube.pods"] = nil, nil
    package.preload["moonrover.kube.client"] = function()
      return { agent = function() return feed end }
    end
    package.preload["moonrover.kube.pods"] = function()
      return { new = function(f)
        assert.equal(feed, f)
        return index
      end }
    end
    agent, changes = fake_agent(), 0
    kd = assert(kube_discovery.new({ analyzers = ANALYZERS, instance_id = "agent-uuid" },
      fake_proc_facts.sys(procs)))
    assert.is_true(kd:start(agent, function() changes = changes + 1 end))
  end)

  after_each(function()
    package.preload["moonrover.kube.client"], package.preload["moonrover.kube.pods"] = nil, nil
    package.loaded["moonrover.kube.client"], package.loaded["moonrover.kube.pods"] = nil, nil
  end)

  it("scans every process at its first tick and every 5 s, and shows it in its metrics", function()
    assert.same({}, kd:processes())
    agent.tick(0.5)
    assert.same({ 300 }, pids(kd:processes()))
    assert.equal(1, changes)
    assert.equal(1, agent.gauges.moonrover_rover_kube_synced.value)
    assert.equal(1, agent.gauges.moonrover_rover_kube_processes_matched.value)
    assert.equal(0, agent.gauges.moonrover_rover_kube_processes_waiting.value)
    procs[300] = nil
    agent.tick(5)
    assert.same({}, kd:processes())
    assert.equal(2, changes)
  end)

  it("keeps what it has while the index has not listed everything", function()
    agent.tick(0.5)
    index.listed = false
    procs[300] = nil
    agent.tick(5)
    assert.same({ 300 }, pids(kd:processes()))
    assert.equal(1, changes)
    assert.equal(0, agent.gauges.moonrover_rover_kube_synced.value)
  end)

  it("scans a process that exec'd at the next second, again while its container is unknown", function()
    agent.tick(0.5)
    procs[400] = { cgroup = fake_proc_facts.cgroup_v1(LATER_ID), cmdline = "/app/cart --worker", comm = "cart",
      exe = "/app/cart", start = 9e9 }
    agent.events({ { EXEC, 400 }, { EXIT, 301 } })
    agent.tick(1)
    assert.same({ 300 }, pids(kd:processes()))
    assert.equal(1, changes)
    cart_pod(index, LATER_ID, "cart-2")
    agent.tick(1)
    assert.same({ 300, 400 }, pids(kd:processes()))
    assert.equal(2, changes)
    -- Found once: no more scans of it, and an exec of a known process adds nothing.
    agent.events({ { EXEC, 300 } })
    agent.tick(1)
    assert.same({ 300, 400 }, pids(kd:processes()))
    assert.equal(2, changes)
  end)

  it("gives up on a new process whose container stays unknown after 5 tries", function()
    agent.tick(0.5)
    local updates = index.updates
    procs[400] = { cgroup = fake_proc_facts.cgroup_v1(LATER_ID), cmdline = "/app/x", comm = "x", exe = "/app/x" }
    agent.events({ { EXEC, 400 } })
    for _ = 1, 7 do
      agent.tick(1)
    end
    assert.equal(updates + 5, index.updates)
  end)

  it("forgets at once a new process in no container", function()
    agent.tick(0.5)
    local updates = index.updates
    procs[500] = { cgroup = "0::/system.slice/cron.service\n", cmdline = "/bin/true", comm = "true", exe = "/bin/true" }
    agent.events({ { EXEC, 500 } })
    agent.tick(1)
    agent.tick(1)
    assert.equal(updates + 1, index.updates)
  end)

  it("scans each second a process a full scan left waiting for its pod's owners", function()
    local pod = index.pods[1]
    index:set_owners(pod, "pending")
    local by_owner = { active = true, filters = {}, layer = "GENERAL", service_name = '{{.Pod.OwnerName "Deployment"}}',
      instance_name = "{{.Pod.Name}}", process_name = "{{.Process.ExeName}}" }
    local owned = assert(kube_discovery.new({ analyzers = { by_owner } }, fake_proc_facts.sys(procs)))
    local its_agent = fake_agent()
    assert.is_true(owned:start(its_agent, function() end))
    its_agent.tick(0.5)
    assert.same({}, owned:processes())
    assert.equal(1, its_agent.gauges.moonrover_rover_kube_processes_waiting.value)
    index:set_owners(pod, { { kind = "Deployment", name = "cart" } })
    its_agent.tick(1)
    assert.same({ 300 }, pids(owned:processes()))
    assert.equal("cart", owned:processes()[1].entity.serviceName)
  end)

  it("says so when the agent has no Kubernetes client", function()
    feed = nil
    local other = assert(kube_discovery.new({ analyzers = ANALYZERS }, fake_proc_facts.sys(procs)))
    assert.same({ false, "the agent has no Kubernetes client" }, { other:start(fake_agent(), function() end) })
  end)

  it("names what names the processes, and refuses a broken analyzer", function()
    assert.equal("1 analyzer in process_discovery.kubernetes", kd:naming_text())
    local bad, err = kube_discovery.new({ analyzers = { { active = true, layer = "X", service_name = "{{.Nope}}",
      instance_name = "i", process_name = "p" } } }, fake_proc_facts.sys(procs))
    assert.is_nil(bad)
    assert.matches("analyzers%[1%]: service_name", err)
  end)
end)
