-- Specs for process_finder.lua (host-mode discovery) over a fake sys: a table
-- of processes, and Lua patterns standing in for the regular expressions.
local finder = require("moonrover.rover.process_finder")
local tables = require("support.tables")

local CID = string.rep("c0ffee", 10) .. "beef"
local SELF = 900

local function fake_sys(procs)
  local sys = { procs = procs, symbol_reads = 0 }
  function sys.list_pids()
    local pids = {}
    for pid in pairs(sys.procs) do
      pids[#pids + 1] = pid
    end
    table.sort(pids)
    return pids
  end
  local function field(name)
    return function(pid)
      local p = sys.procs[pid]
      return p and p[name]
    end
  end
  function sys.read(pid, file)
    local p = sys.procs[pid]
    return p and p[file]
  end
  sys.exe = field("exe")
  sys.cwd = field("cwd")
  function sys.start_ns(pid)
    local p = sys.procs[pid]
    return p and p.start_ns or 0
  end
  function sys.has_symbols(pid)
    sys.symbol_reads = sys.symbol_reads + 1
    local p = sys.procs[pid]
    if p then
      return p.symbols
    end
    return nil
  end
  function sys.regex(pattern)
    if not pcall(string.find, "", pattern) then
      return nil, "malformed pattern"
    end
    return {
      match = function(_, s)
        local found = { s:find(pattern) }
        return found[1] and { s:sub(found[1], found[2]) } or nil
      end,
    }
  end
  function sys.host_ip() return "10.0.0.7" end
  function sys.hostname() return "web-1" end
  function sys.self_pid() return SELF end
  return sys
end

local function proc(exe, cmdline, more)
  return tables.merged({ exe = exe, cmdline = cmdline, cwd = "/srv", cgroup = "0::/system.slice/x.service\n",
    start_ns = 1000, symbols = true }, more)
end

local function host()
  return {
    [1] = proc("/usr/lib/systemd/systemd", "/sbin/init splash "),
    [2] = proc(nil, "", { cgroup = "0::/\n" }),                -- kthreadd
    [310] = proc("/usr/sbin/nginx", "nginx: master process /usr/sbin/nginx -g daemon on; "),
    [311] = proc("/usr/sbin/nginx", "nginx: worker process "),
    [420] = proc("/usr/bin/redis-server", "/usr/bin/redis-server 127.0.0.1:6379 ",
      { cgroup = "0::/system.slice/docker-" .. CID .. ".scope\n", start_ns = 5000 }),
    [500] = proc("/usr/bin/python3.11", "python3 app.py "),
    [SELF] = proc("/usr/bin/moonrover", "moonrover agent --config /etc/moonrover.lib.yaml "),
  }
end

local BASE = {
  instance_id = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d",
  rules = {
    { match_cmd = "nginx", layer = "OS_LINUX", service_name = "web-{{.Process.ExeName}}",
      instance_name = "{{.Rover.HostName}}", process_name = "{{.Process.ExeName}}", labels = "web, edge" },
    { match_cmd = "redis", service_name = "cache", process_name = "redis-{{.Process.Pid}}",
      labels = "b,a,b" },
    { match_cmd = "python", service_name = "{{.Process.ExeName}}" },
    { match_cmd = "moonrover", service_name = "self" },
  },
}

local function cfg(over)
  return tables.merged(BASE, over)
end

local function by_pid(list)
  local out = {}
  for _, p in ipairs(list) do
    out[p.pid] = p
  end
  return out
end

local function pids(list)
  return tables.pluck(list, "pid")
end

describe("process_finder.new", function()
  it("names the rule and field of a bad regex or template", function()
    local f, err = finder.new(cfg({ rules = { BASE.rules[1], { match_cmd = "[a", service_name = "x" } } }),
      fake_sys({}))
    assert.is_nil(f)
    assert.equal("process_discovery rule 2: match_cmd: malformed pattern", err)
    f, err = finder.new(cfg({ rules = { { match_cmd = "a", service_name = "x", process_name = "{{.Proc}}" } } }),
      fake_sys({}))
    assert.is_nil(f)
    assert.equal("process_discovery rule 1: process_name: 1:3: unknown field .Proc", err)
    f, err = finder.new(cfg({ rules = { { match_cmd = "a" } } }), fake_sys({}))
    assert.is_nil(f)
    assert.equal("process_discovery rule 1: service_name: not a string", err)
  end)

  it("says which sys function is missing", function()
    local sys = fake_sys({})
    sys.cwd = nil
    local f, err = finder.new(cfg(), sys)
    assert.is_nil(f)
    assert.equal("sys.cwd: missing", err)
  end)
end)

describe("process_finder:scan", function()
  it("names each process by the first rule that matches its command line", function()
    local f = assert(finder.new(cfg(), fake_sys(host())))
    local found = by_pid(f:scan())
    assert.same({ layer = "OS_LINUX", serviceName = "web-nginx", instanceName = "web-1",
      processName = "nginx", labels = { "edge", "web" } }, found[310].entity)
    assert.same({ layer = "OS_LINUX", serviceName = "cache", instanceName = "10.0.0.7",
      processName = "redis-420", labels = { "a", "b" } }, found[420].entity)
    assert.same({ layer = "OS_LINUX", serviceName = "python3.11", instanceName = "10.0.0.7",
      processName = "python3.11", labels = {} }, found[500].entity)
  end)

  it("reports one process per entity, skipping itself, kernel threads and unmatched ones", function()
    local f = assert(finder.new(cfg(), fake_sys(host())))
    assert.same({ 310, 420, 500 }, pids(f:scan()))
  end)

  it("fills the process and its properties", function()
    local f = assert(finder.new(cfg(), fake_sys(host())))
    local found = by_pid(f:scan())
    local redis = found[420]
    assert.equal(5000, redis.start_ns)
    assert.equal("/usr/bin/redis-server", redis.exe)
    assert.equal("/usr/bin/redis-server 127.0.0.1:6379", redis.command_line)
    assert.equal(CID, redis.container_id)
    assert.same({ host_ip = "10.0.0.7", pid = "420", command_line = "/usr/bin/redis-server 127.0.0.1:6379",
      support_ebpf_profiling = "true", container_id = CID }, redis.properties)
    assert.is_nil(found[310].container_id)
    assert.is_nil(found[310].properties.container_id)
  end)

  it("marks interpreters and binaries without symbols as not profilable", function()
    local procs = host()
    procs[310].symbols = false
    local f = assert(finder.new(cfg(), fake_sys(procs)))
    local found = by_pid(f:scan())
    assert.equal("false", found[310].properties.support_ebpf_profiling)
    assert.equal("false", found[500].properties.support_ebpf_profiling)
    assert.equal("true", found[420].properties.support_ebpf_profiling)
  end)

  it("asks for symbols once per process and executable", function()
    local sys = fake_sys(host())
    local f = assert(finder.new(cfg(), sys))
    f:scan()
    f:scan()
    assert.equal(3, sys.symbol_reads)
    sys.procs[420].exe = "/usr/bin/redis-server-7"
    f:scan()
    assert.equal(4, sys.symbol_reads)
  end)

  it("asks again when symbols could not be told", function()
    local sys = fake_sys({ [310] = proc("/usr/sbin/nginx", "nginx: master") })
    sys.procs[310].symbols = nil
    local f = assert(finder.new(cfg(), sys))
    assert.equal("false", f:scan()[1].properties.support_ebpf_profiling)
    sys.procs[310].symbols = true
    assert.equal("true", f:scan()[1].properties.support_ebpf_profiling)
  end)

  it("keeps an entity with the process that had it", function()
    local sys = fake_sys(host())
    local f = assert(finder.new(cfg(), sys))
    sys.procs[310] = nil
    assert.same({ 311, 420, 500 }, pids(f:scan()))
    sys.procs[305] = proc("/usr/sbin/nginx", "nginx: master process")
    assert.same({ 311, 420, 500 }, pids(f:scan()))
  end)

  it("reads no more than the command line of processes no rule matches", function()
    local sys = fake_sys(host())
    local read = {}
    local exe = sys.exe
    sys.exe = function(pid)
      read[#read + 1] = pid
      return exe(pid)
    end
    local f = assert(finder.new(cfg(), sys))
    f:scan()
    assert.same({ 310, 311, 420, 500 }, read)
  end)

  it("skips processes that vanish while being read", function()
    local sys = fake_sys(host())
    local list = sys.list_pids
    sys.list_pids = function()
      local all = list()
      all[#all + 1] = 777 -- listed, gone before it is read
      return all
    end
    sys.procs[500].cgroup = nil -- gone between cmdline and cgroup
    local f = assert(finder.new(cfg(), sys))
    assert.same({ 310, 420 }, pids(f:scan()))
  end)

  it("names a deleted executable by its path", function()
    local procs = host()
    procs[310].exe = "/usr/sbin/nginx (deleted)"
    local f = assert(finder.new(cfg(), fake_sys(procs)))
    local nginx = by_pid(f:scan())[310]
    assert.equal("/usr/sbin/nginx", nginx.exe)
    assert.equal("web-nginx", nginx.entity.serviceName)
  end)

  it("prefixes the cluster name unless the service has one", function()
    local rules = { { match_cmd = "nginx", service_name = "web" }, { match_cmd = "redis", service_name = "k::cache" } }
    local f = assert(finder.new(cfg({ rules = rules, cluster_name = "prod" }), fake_sys(host())))
    local found = by_pid(f:scan())
    assert.equal("prod::web", found[310].entity.serviceName)
    assert.equal("k::cache", found[420].entity.serviceName)
  end)

  it("leaves out processes whose names render empty", function()
    local rules = { { match_cmd = "nginx", service_name = "{{.Container.ID}}" } }
    local f = assert(finder.new(cfg({ rules = rules }), fake_sys(host())))
    assert.same({}, f:scan())
  end)

  it("renders the container id and work dir", function()
    local rules = { { match_cmd = ".", service_name = "s", process_name = "{{.Container.ID}}{{.Process.WorkDir}}" } }
    local sys = fake_sys({ [420] = host()[420] })
    local f = assert(finder.new(cfg({ rules = rules }), sys))
    assert.equal(CID .. "/srv", f:scan()[1].entity.processName)
    sys.procs[420].cwd = nil
    assert.equal(CID, f:scan()[1].entity.processName)
  end)
end)

describe("process_finder namer", function()
  it("names processes before the rules, with the documented ctx", function()
    local seen
    local namer = function(ctx)
      if ctx.process.exe_name == "redis-server" then
        seen = ctx
        return { layer = "GENERAL", serviceName = "kv", instanceName = ctx.rover.host_name,
          processName = ctx.container.runtime, labels = { "z", "a" } }
      end
      if ctx.process.exe_name == "python3.11" then
        return false
      end
      return nil
    end
    local f = assert(finder.new(cfg({ namer = namer }), fake_sys(host())))
    local list = f:scan()
    assert.same({ 310, 420 }, pids(list))
    assert.same({ layer = "GENERAL", serviceName = "kv", instanceName = "web-1", processName = "docker",
      labels = { "a", "z" } }, by_pid(list)[420].entity)
    assert.same({ pid = 420, exe_path = "/usr/bin/redis-server", exe_name = "redis-server",
      command_line = "/usr/bin/redis-server 127.0.0.1:6379", work_dir = "/srv" }, seen.process)
    assert.same({ id = CID, runtime = "docker" }, seen.container)
    assert.same({ instance_id = BASE.instance_id, host_ip = "10.0.0.7", host_name = "web-1" }, seen.rover)
  end)

  it("reports namer errors and bad entities as problems, not failures", function()
    local namer = function(ctx)
      if ctx.process.pid == 310 then
        error("boom")
      end
      if ctx.process.pid == 420 then
        return { layer = "OS_LINUX", serviceName = 1 }
      end
      return nil
    end
    local f = assert(finder.new(cfg({ namer = namer }), fake_sys(host())))
    local list, problems = f:scan()
    assert.same({ 311, 500 }, pids(list))
    assert.equal(2, #problems)
    assert.matches("namer failed for pid 310: .*boom", problems[1])
    assert.equal("namer returned a bad entity for pid 420: serviceName is not a string", problems[2])
  end)

  it("must be a function", function()
    local f, err = finder.new(cfg({ namer = "x" }), fake_sys({}))
    assert.is_nil(f)
    assert.equal("process_discovery namer: not a function", err)
  end)
end)

describe("process_finder.entity_key", function()
  it("compares labels as a set", function()
    local a = { layer = "L", serviceName = "s", instanceName = "i", processName = "p", labels = { "x", "y" } }
    local b = { layer = "L", serviceName = "s", instanceName = "i", processName = "p", labels = { "y", "x", "x" } }
    local c = { layer = "L", serviceName = "s", instanceName = "i", processName = "p", labels = { "x" } }
    assert.equal(finder.entity_key(a), finder.entity_key(b))
    assert.not_equal(finder.entity_key(a), finder.entity_key(c))
  end)
end)
