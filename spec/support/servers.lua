-- servers.lua - servers and clients for end-to-end specs of the network
-- tracer: systemd-like services (a cgroup v2 directory under system.slice,
-- so that the tracer names their processes' container as coroot would) and
-- cgroups of no known layout, wherever this mount namespace has its cgroup
-- v2 hierarchy (/sys/fs/cgroup on Debian 12, /sys/fs/cgroup/unified on a
-- hybrid host: lib/cgroup_layout.lua reads /proc/self/mountinfo), free
-- ports, Debian's nginx with a configuration of its own, and Debian's python3
-- running spec/support/http_server.py or any other script. Every process is
-- started inside its service from its first system call, and stopped by its
-- pid; a service's cgroup is removed once nothing runs in it.
local cgroup_layout = require("moonrover.lib.cgroup_layout")
local e2e = require("support.e2e")
local clock = require("support.clock")
local write = require("support.files").write

local _M = {}

_M.PYTHON = "/usr/bin/python3"
_M.NGINX = "/usr/sbin/nginx"
_M.SUPPORT = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support"

local q = e2e.quote

-- Why services and cgroups cannot be made here (no cgroup v2 hierarchy
-- mounted whole: a cgroup v1 only host, say), or nil when they can: a spec
-- that needs them skips with it (support/skip.lua).
function _M.cgroup_skip_reason()
  local layout = cgroup_layout.find(e2e.read_all("/proc/self/mountinfo"))
  if layout.v2 and layout.v2.root == "/" then
    return nil
  end
  return "no cgroup v2 hierarchy is mounted whole here (" .. cgroup_layout.describe(layout) .. ")"
end

-- Where the cgroup v2 hierarchy's root is mounted here, or raises saying
-- what is mounted instead (cgroup_skip_reason() tells first).
function _M.cgroup_root()
  local layout = cgroup_layout.find(e2e.read_all("/proc/self/mountinfo"))
  assert(layout.v2 and layout.v2.root == "/", _M.cgroup_skip_reason())
  return layout.v2.point
end

-- Ports are picked below the ephemeral range (32768-60999 by default): the
-- kernel does not hand them to clients, and coroot's metrics leave out
-- destinations and listening sockets in that range.
local PICK_PORT = [[
import random, socket
for _ in range(1000):
    port = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
]]

-- A TCP port of 127.0.0.1 that nothing uses now (another process may take
-- it before the caller does: the starters below try again).
function _M.free_port()
  local code, out, err = e2e.run(_M.PYTHON .. " -c " .. q(PICK_PORT))
  local port = tonumber(out)
  assert(code == 0 and port, "cannot find a free port: " .. err)
  return port
end

local function alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0
end
_M.alive = alive

-- Whether the process pid (or one of its children) listens on 127.0.0.1:port.
local function listening(port, pids)
  local _, out = e2e.run("ss -Hltnp " .. q("sport = :" .. port))
  for pid in out:gmatch("pid=(%d+)") do
    if pids[tonumber(pid)] then
      return true
    end
  end
  return false
end

local Service = {}
Service.__index = Service

-- A cgroup at path (below the v2 hierarchy's root, made with the
-- directories above it), which the tracer names by that path (its id);
-- remove() removes it, then made: the directories above made for it alone,
-- deepest first.
function _M.cgroup(path, made)
  local root = _M.cgroup_root()
  local self = setmetatable({ path = root .. path, id = path, made = {} }, Service)
  for i, dir in ipairs(made) do
    self.made[i] = root .. dir
  end
  local code, _, err = e2e.run("mkdir -p " .. q(self.path))
  assert(code == 0, "cannot make the cgroup " .. self.path .. ": " .. err)
  return self
end

-- The name of dir's case (dir from e2e.tmpdir()) for cgroups.
local function case_name(dir, name)
  return "moonrover-spec-" .. name .. "-" .. dir:match("[^.]+$")
end

-- A new service for dir's case: its cgroup is made. service.id is the
-- container_id the tracer gives its processes.
function _M.service(dir, name)
  local unit = case_name(dir, name) .. ".service"
  return _M.cgroup("/system.slice/" .. unit, {})
end

-- A cgroup of no layout the tracer knows for dir's case,
-- /moonrover-spec-NAME-CASE/app: the tracer names its processes by that
-- path (service.id).
function _M.unknown_cgroup(dir, name)
  local top = "/" .. case_name(dir, name)
  return _M.cgroup(top .. "/app", { top })
end

-- A shell command that runs cmd (shell words) in the service from its first
-- system call.
function Service:command(cmd)
  return "sh -c " .. q("echo $$ >" .. self.path .. "/cgroup.procs && exec " .. cmd)
end

-- Runs cmd in the service and waits for it; returns its exit code, standard
-- output and standard error.
function Service:run(cmd)
  return e2e.run(self:command(cmd))
end

-- Starts cmd in the service in the background, its output into the file out
-- (default: none); returns its pid.
function Service:start(cmd, out)
  local p = assert(io.popen(self:command(cmd) .. " >" .. q(out or "/dev/null") .. " 2>&1 & echo $!"))
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

-- The pids of the processes in the service now.
function Service:pids()
  local pids = {}
  for pid in (e2e.read_all(self.path .. "/cgroup.procs") or ""):gmatch("%d+") do
    pids[tonumber(pid)] = true
  end
  return pids
end

-- Stops the process pid of the service (SIGTERM, then SIGKILL after 10 s)
-- and waits until it has exited.
function Service:stop(pid)
  os.execute("kill -TERM " .. pid .. " 2>/dev/null")
  if not clock.wait_for(function() return not self:pids()[pid] end) then
    os.execute("kill -KILL " .. pid .. " 2>/dev/null")
    clock.wait_for(function() return not self:pids()[pid] end)
  end
end

-- Stops what still runs in the service and removes its cgroup.
function Service:remove()
  for pid in pairs(self:pids()) do
    self:stop(pid)
  end
  os.execute("rmdir " .. q(self.path) .. " 2>/dev/null")
  for _, dir in ipairs(self.made) do
    os.execute("rmdir " .. q(dir) .. " 2>/dev/null")
  end
end

-- Starts cmd_for(port) in the service on a free port until it listens there
-- (a few tries: another process may take the port first); returns its pid
-- and port, or raises with the file out's text.
local function start_listening(service, cmd_for, out)
  for _ = 1, 5 do
    local port = _M.free_port()
    local pid = service:start(cmd_for(port), out)
    local up = clock.wait_for(function()
      return listening(port, service:pids()) or not alive(pid)
    end)
    if up and alive(pid) then
      return pid, port
    end
    service:stop(pid)
  end
  error("the server did not start: " .. (e2e.read_all(out) or ""))
end

local NGINX_CONF = [[
worker_processes 1;
pid HOME/nginx.pid;
error_log HOME/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path HOME/tmp;
  proxy_temp_path HOME/tmp;
  fastcgi_temp_path HOME/tmp;
  uwsgi_temp_path HOME/tmp;
  scgi_temp_path HOME/tmp;
  server {
    listen 127.0.0.1:%d;
    root HOME/www;
%s
  }
}
]]

-- Starts Debian's nginx (in the foreground, a master and one worker) in
-- service, with its files in dir/nginx and `locations` (nginx directives)
-- in its server block, whose root is dir/nginx/www. Returns { pid, port }.
function _M.nginx(service, dir, locations)
  local home = dir .. "/nginx"
  assert(os.execute("mkdir -p " .. q(home .. "/tmp") .. " " .. q(home .. "/www")) == 0)
  local pid, port = start_listening(service, function(port)
    write(home .. "/nginx.conf", (NGINX_CONF:format(port, locations):gsub("HOME", function() return home end)))
    return string.format("%s -e %s -p %s -c %s -g 'daemon off;'", _M.NGINX, q(home .. "/error.log"), q(home .. "/"),
      q(home .. "/nginx.conf"))
  end, home .. "/out")
  return { pid = pid, port = port }
end

-- Starts spec/support/http_server.py in service on a free port: routes is a
-- list of "PATH=STATUS" or "PATH=STATUS:SECONDS" (the answer is delayed that
-- long). Returns { pid, port }.
function _M.http_server(service, dir, routes)
  local pid, port = start_listening(service, function(port)
    local words = { _M.PYTHON, q(_M.SUPPORT .. "/http_server.py"), port }
    for _, r in ipairs(routes) do
      words[#words + 1] = q(r)
    end
    return table.concat(words, " ")
  end, dir .. "/http_server.out")
  return { pid = pid, port = port }
end

return _M
