-- trace_e2e.lua - helpers for the `moonrover trace` end-to-end specs: the
-- scene each test starts from (a temp dir, a free port, nginx if asked for;
-- all gone after the test), servers (nginx with a configuration of its own,
-- the Python server of trace_http_server.py) in a spec's temp dir, clients
-- started blocked so that their pid can be traced before they run, a trace
-- of given pids that ends when they are all gone (or of any arguments,
-- interrupted), and its JSON lines read back.
local e2e = require("support.e2e")
local files = require("support.files")
local json_lines = require("support.json_lines")

local _M = {}

local q = e2e.quote
local PYTHON = "/usr/bin/python3"
local NGINX = "/usr/sbin/nginx"
local WAIT_STEP = 0.05
local WAIT_MAX = 60 -- seconds for anything to start or end on a busy machine

local started = {} -- pids of the clients and traces started and not seen ending, for stop_all()

-- Why the specs cannot run here (e2e.skip_reason, or a program of `programs`
-- missing: by default python3, nginx, curl and wrk), or nil.
_M.skip_reason = function(programs)
  local why = e2e.skip_reason()
  if why then
    return why
  end
  for _, path in ipairs(programs or { PYTHON, NGINX, "/usr/bin/curl", "/usr/bin/wrk" }) do
    if not io.open(path, "rb") then
      return path .. " is not installed (scripts/setup.sh installs it)"
    end
  end
  return nil
end

local function sleep(s)
  os.execute("sleep " .. s)
end

-- Waits until done() is true; fails the spec with what when it never is.
local function wait_for(what, done)
  for _ = 1, WAIT_MAX / WAIT_STEP do
    if done() then
      return
    end
    sleep(WAIT_STEP)
  end
  error("gave up waiting for " .. what)
end
_M.wait_for = wait_for

function _M.alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0
end

-- A TCP port no socket of 127.0.0.1 or ::1 uses now.
function _M.free_port()
  local p = io.popen(PYTHON .. [[ -c 'import socket
s = socket.socket(socket.AF_INET6)
s.bind(("::", 0))
print(s.getsockname()[1])']])
  local port = tonumber(p:read("*l"))
  p:close()
  return port
end

-- Runs a shell command line in the background; returns its pid.
local function background(cmd)
  local p = io.popen(cmd .. " & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

-- nginx as one process (no workers) serving dir/www on port of 127.0.0.1
-- and ::1; extra: more directives of its http and server blocks (http,
-- server), and workers: a master with that many worker processes instead
-- (as root: the spec's temp dir is root's alone).
-- Returns its pid (the master's).
function _M.nginx(dir, port, extra)
  os.execute("mkdir -p " .. q(dir .. "/www") .. " " .. q(dir .. "/nginx_tmp"))
  local workers = extra and extra.workers
  local conf = table.concat({
    "daemon off;", workers and "master_process on; user root;" or "master_process off;",
    "worker_processes " .. (workers or 1) .. ";",
    "error_log " .. dir .. "/nginx_error.log;", "pid " .. dir .. "/nginx.pid;",
    "events { worker_connections 256; }",
    "http {", "  access_log off;", "  sendfile on;", "  keepalive_requests 1000000;",
    "  client_body_temp_path " .. dir .. "/nginx_tmp;", "  proxy_temp_path " .. dir .. "/nginx_tmp;",
    "  fastcgi_temp_path " .. dir .. "/nginx_tmp;", "  uwsgi_temp_path " .. dir .. "/nginx_tmp;",
    "  scgi_temp_path " .. dir .. "/nginx_tmp;", extra and extra.http or "",
    "  server {", "    listen 127.0.0.1:" .. port .. ";", "    listen [::1]:" .. port .. ";",
    "    root " .. dir .. "/www;", extra and extra.server or "", "  }", "}", "" }, "\n")
  files.write(dir .. "/nginx.conf", conf)
  local pid = background(q(NGINX) .. " -c " .. q(dir .. "/nginx.conf") .. " -p " .. q(dir) ..
    " >/dev/null 2>" .. q(dir .. "/nginx.err"))
  wait_for("nginx on port " .. port, function()
    return os.execute("curl -s -o /dev/null http://127.0.0.1:" .. port .. "/") == 0 or not _M.alive(pid)
  end)
  assert(_M.alive(pid), "nginx did not start: " .. (files.read(dir .. "/nginx.err") or ""))
  return pid
end

-- The Python server of trace_http_server.py (accepting in a thread named
-- thread_name, when given); returns its pid and port.
function _M.python_server(dir, thread_name)
  local script = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/trace_http_server.py"
  local pid = background(PYTHON .. " " .. q(script) .. " " .. q(dir) .. (thread_name and " " .. q(thread_name) or "") ..
    " >/dev/null 2>" .. q(dir .. "/server.err"))
  wait_for("the Python server's port", function()
    return files.read(dir .. "/port") ~= nil or not _M.alive(pid)
  end)
  assert(_M.alive(pid), "the Python server did not start: " .. (files.read(dir .. "/server.err") or ""))
  return pid, tonumber(files.read(dir .. "/port"))
end

-- The responses the Python server wrote: list of { path, bytes }.
function _M.sent(dir)
  local list = {}
  for path, n in (files.read(dir .. "/sent.log") or ""):gmatch("(%S+) (%d+)") do
    list[#list + 1] = { path = path, bytes = tonumber(n) }
  end
  return list
end

-- A client that waits for release() before it runs cmd (exec'ed: the pid
-- stays the same, so a trace of it can start first). Its standard output
-- and error go to dir/<name>.out and .err.
function _M.blocked(dir, name, cmd)
  local fifo = dir .. "/" .. name .. ".go"
  assert(os.execute("mkfifo " .. q(fifo)) == 0)
  local pid = background("sh -c " .. q("read x < " .. q(fifo) .. "; exec " .. cmd) .. " >" ..
    q(dir .. "/" .. name .. ".out") .. " 2>" .. q(dir .. "/" .. name .. ".err"))
  started[pid] = true
  local client = { pid = pid }
  function client.release()
    os.execute("echo go > " .. q(fifo))
  end
  function client.wait()
    wait_for(name .. " to end", function()
      return not _M.alive(pid)
    end)
    started[pid] = nil
    return files.read(dir .. "/" .. name .. ".out") or "", files.read(dir .. "/" .. name .. ".err") or ""
  end
  return client
end

-- Starts `moonrover trace` with the argument words given (writing to
-- dir/<name>.out, standard error to dir/<name>.trace_err); returns once it
-- traces.
function _M.trace_words(dir, name, words)
  local cmd = { q(e2e.bin), "trace", "-o", q(dir .. "/" .. name .. ".out") }
  for _, w in ipairs(words) do
    cmd[#cmd + 1] = q(w)
  end
  local err = dir .. "/" .. name .. ".trace_err"
  local pid = background(table.concat(cmd, " ") .. " 2>" .. q(err) .. " >/dev/null")
  started[pid] = true
  local t = { pid = pid }
  wait_for("the trace to start", function()
    return (files.read(err) or ""):find("tracing", 1, true) or not _M.alive(pid)
  end)
  -- Waits for its end (its processes all gone, or interrupt: Ctrl-C);
  -- returns what it wrote and its summary (standard error).
  function t.output()
    wait_for("the trace to end", function()
      return not _M.alive(pid)
    end)
    started[pid] = nil
    return files.read(dir .. "/" .. name .. ".out") or "", files.read(err) or ""
  end
  -- The JSON lines decoded, and the summary.
  function t.result()
    local out, summary = t.output()
    return json_lines.decode_all(out), summary
  end
  function t.interrupt()
    os.execute("kill -INT " .. pid)
    return t.result()
  end
  return t
end

-- Starts `moonrover trace --format json` of pids (a list); extra: more
-- argument words. It ends when its processes are all gone.
function _M.trace(dir, name, pids, extra)
  local words = { "--format", "json", "-p", table.concat(pids, ","), "-d", "120" }
  for _, w in ipairs(extra or {}) do
    words[#words + 1] = w
  end
  return _M.trace_words(dir, name, words)
end

local Scene = {}
Scene.__index = Scene

-- Starts nginx (extra as for nginx()) serving page as index.html; its pid,
-- also scene.nginx, stopped after the test.
function Scene:serve(page, extra)
  self.nginx = _M.nginx(self.dir, self.port, extra)
  files.write(self.dir .. "/www/index.html", page)
  return self.nginx
end

-- Runs the client cmd (named name) once a trace of it and nginx runs; stops
-- nginx when the client is done. Returns the exchanges, the summary, the
-- client's pid and its standard output.
function Scene:traced(name, cmd)
  local client = _M.blocked(self.dir, name, cmd)
  local trace = _M.trace(self.dir, "trace", { self.nginx, client.pid })
  client.release()
  local out = client.wait()
  e2e.kill(self.nginx)
  local list, summary = trace.result()
  return list, summary, client.pid, out
end

-- What each test of a trace spec starts from, made afresh with busted's
-- hooks: scene.dir (a temp dir), scene.port (a free port) and, when
-- opts.page is given, scene.nginx serving it (opts.nginx: the extra of
-- nginx()). After each test the clients and traces still running, nginx
-- and the dir are gone.
function _M.each_test(before_each, after_each, opts)
  opts = opts or {}
  local scene = setmetatable({}, Scene)
  before_each(function()
    scene.dir, scene.port = e2e.tmpdir(), _M.free_port()
    if opts.page then
      scene:serve(opts.page, opts.nginx)
    end
  end)
  after_each(function()
    _M.stop_all()
    e2e.kill(scene.nginx)
    scene.nginx = nil
    e2e.rmdir(scene.dir)
  end)
  return scene
end

-- Kills the clients and traces still running (a case that failed midway).
function _M.stop_all()
  for pid in pairs(started) do
    e2e.kill(pid)
  end
  started = {}
end

-- Exchanges of list matching every field of want.
function _M.select(list, want)
  local out = {}
  for _, ex in ipairs(list) do
    local ok = true
    for k, v in pairs(want) do
      if ex[k] ~= v then
        ok = false
      end
    end
    if ok then
      out[#out + 1] = ex
    end
  end
  return out
end

-- How many exchanges of list there are per status ("200") or error.
function _M.by_status(list)
  local counts = {}
  for _, ex in ipairs(list) do
    local key = ex.error or tostring(ex.status)
    counts[key] = (counts[key] or 0) + 1
  end
  return counts
end

-- The keys of the JSON contract, and the form of each line's fields.
_M.TS = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d%d%d%dZ$"

return _M
