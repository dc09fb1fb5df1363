-- k8s_spec.lua - moonrover.k8s over a fake feed and cgroup files: a
-- process's pod with its container and owners, the reasons it has none, an
-- index updated at most once a second, and the example of docs/lua-api.md
-- run as a script against the fake feed.
local k8s = require("moonrover.k8s")
local kube_feed = require("support.kube_feed")
local lua_api_doc = require("support.lua_api_doc")
local objects = require("support.kube.objects")

local ID = string.rep("ab", 32)
local OTHER = string.rep("cd", 32)

local function cgroup_of(id)
  return "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-"
    .. id .. ".scope\n"
end

-- A feed with the pod shop/cart-7d9-x2 of the Deployment cart on node-a
-- (container "cart" has ID), and a source over it; cgroups[pid] is what
-- /proc/PID/cgroup holds; clock.t the time.
local function scene()
  local feed = kube_feed.new()
  local rs = feed:put_owners("shop", { { "Deployment", "cart" }, { "ReplicaSet", "cart-7d9" } })
  local pod = feed:add("pod", objects.pod({ name = "cart-7d9-x2", namespace = "shop", node = "node-a", owner = rs,
    labels = { app = "cart" }, containers = { { name = "cart", id = ID } } }))
  feed:synced("pod")
  feed:synced("service")
  local cgroups, clock = { [10] = cgroup_of(ID), [11] = "0::/user.slice/session-1.scope\n",
    [12] = cgroup_of(OTHER) }, { t = 100 }
  local source = k8s.new({
    feed = feed,
    read = function(pid)
      return cgroups[pid] or nil, "no process " .. pid
    end,
    now = function() return clock.t end,
  })
  return { feed = feed, pod = pod, source = source, cgroups = cgroups, clock = clock }
end

describe("moonrover.k8s", function()
  it("gives a process's pod, container and owners", function()
    local s = scene()
    s.feed:release()
    assert.is_true(s.source:available())
    assert.same({ name = "cart-7d9-x2", namespace = "shop", uid = s.pod.metadata.uid, node = "node-a",
      labels = { app = "cart" }, container = { name = "cart", id = ID },
      owner = { kind = "Deployment", name = "cart" },
      owners = { { kind = "ReplicaSet", name = "cart-7d9" }, { kind = "Deployment", name = "cart" } } },
      s.source:pod_of(10))
  end)

  it("leaves the owners out while they are fetched", function()
    local s = scene()
    local pod = assert(s.source:pod_of(10))
    assert.equal("cart-7d9-x2", pod.name)
    assert.is_nil(pod.owner)
    assert.is_nil(pod.owners)
  end)

  it("says why a process has no pod", function()
    local s = scene()
    assert.same({ nil, "not in a container" }, { s.source:pod_of(11) })
    assert.same({ nil, "no pod has container " .. OTHER }, { s.source:pod_of(12) })
    assert.same({ nil, "no process 13" }, { s.source:pod_of(13) })
    local off = k8s.new({ read = function() error("not read") end, now = function() return 0 end })
    assert.is_false(off:available())
    assert.same({ nil, "kubernetes discovery is off" }, { off:pod_of(10) })
    assert.same({ nil, "kubernetes discovery is off" }, { off:index() })
  end)

  it("reads the feed at most once a second", function()
    local s = scene()
    assert.is_truthy(s.source:pod_of(10))
    s.feed:add("pod", objects.pod({ name = "late", namespace = "shop", containers = { { name = "c", id = OTHER } } }))
    s.clock.t = 100.5
    assert.same({ nil, "no pod has container " .. OTHER }, { s.source:pod_of(12) })
    s.clock.t = 101
    assert.equal("late", s.source:pod_of(12).name)
    assert.is_true(s.source:index():synced())
  end)

  describe("the example of docs/lua-api.md", function()
    -- Runs the example with moonrover.agent, moonrover.profiles and
    -- moonrover.k8s replaced by fakes; returns what it logged and started,
    -- and its "process" handler.
    local function run_example(source)
      local blocks = lua_api_doc.examples("## Kubernetes: `moonrover.k8s`")
      assert.equal(2, #blocks, "examples of the Kubernetes section")
      local example = blocks[2]
      local run = { logged = {}, started = {} }
      local agent = { EXEC = 1, EXIT = 2, log = {}, set_budget = function(ms) run.budget = ms end,
        on = function(stream, fn) run.handlers = run.handlers or {}; run.handlers[stream] = fn end }
      function agent.log.info(fmt, ...)
        run.logged[#run.logged + 1] = string.format(fmt, ...)
      end
      local profiles = { start = function(opts)
        run.started[#run.started + 1] = opts
        return {}
      end }
      local fakes = { ["moonrover.agent"] = agent, ["moonrover.profiles"] = profiles, ["moonrover.k8s"] = {
        pod_of = function(pid) return source:pod_of(pid) end } }
      local env = setmetatable({ require = function(name) return fakes[name] or require(name) end }, { __index = _G })
      local chunk = assert(loadstring(example, "=lua-api.md"))
      setfenv(chunk, env)
      chunk()
      return run
    end

    local function batch(events)
      return { n = #events, each = function()
        local i = 0
        return function()
          i = i + 1
          return events[i]
        end
      end }
    end

    it("profiles the processes that start in a pod of the Deployment cart, and no other", function()
      local s = scene()
      s.feed:release()
      s.feed:add("pod", objects.pod({ name = "web-1", namespace = "shop", containers = { { name = "web",
        id = OTHER } } }))
      local run = run_example(s.source)
      assert.equal(10000, run.budget)
      run.handlers.process(batch({ { kind = 1, pid = 10 }, { kind = 1, pid = 11 }, { kind = 1, pid = 12 },
        { kind = 2, pid = 10 } }))
      assert.equal(1, #run.started)
      assert.same({ 10 }, run.started[1].pids)
      assert.equal(10, run.started[1].duration)
      run.started[1].on_done({ total = 42 })
      assert.same({ "profiling shop/cart-7d9-x2, container cart, pid 10", "pid 10: 42 samples" }, run.logged)
    end)
  end)
end)
