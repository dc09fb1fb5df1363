-- profile_e2e.lua - the set-up the end-to-end profile specs share: a scratch
-- directory per test, workloads spawned in it and killed after it, and
-- `go tool pprof` run offline with its caches in that directory.
--
--   local run = profile_e2e.each_test(before_each, after_each)
--   local pid = run:spawn("cpu_ratio", "60")   -- run.dir: the test's directory
local e2e = require("support.e2e")

local _M = {}

local Run = {}
Run.__index = Run

function _M.new()
  return setmetatable({ pids = {} }, Run)
end

-- A fresh directory (run.dir) and no workload yet.
function Run:starter()
  return function()
    self.dir = e2e.tmpdir()
    self.pids = {}
  end
end

-- Kills what spawn started and removes the directory.
function Run:finisher()
  return function()
    for _, pid in ipairs(self.pids) do
      e2e.kill(pid)
    end
    e2e.rmdir(self.dir)
  end
end

-- A run whose directory and workloads last one test each: the starter and
-- finisher given to busted's before_each and after_each.
function _M.each_test(before_each, after_each)
  local run = _M.new()
  before_each(run:starter())
  after_each(run:finisher())
  return run
end

-- Kills pid after the test as well; returns it.
function Run:own(pid)
  self.pids[#self.pids + 1] = pid
  return pid
end

-- Starts a workload (spec/workloads) killed after the test; its pid.
function Run:spawn(name, arg_words)
  return self:own(e2e.spawn(name, arg_words))
end

-- The environment `go tool pprof` runs in: its caches in the directory, no
-- network.
function Run:go_env()
  local dir = self.dir
  return "HOME=" .. dir .. " GOPATH=" .. dir .. "/go GOCACHE=" .. dir .. "/gocache GOPROXY=off GOFLAGS=-mod=mod "
end

-- Runs `go tool pprof ARGS FILE`: exit code, stdout, stderr.
function Run:pprof(args, file)
  return e2e.run(self:go_env() .. "go tool pprof " .. args .. " " .. e2e.quote(file))
end

return _M
