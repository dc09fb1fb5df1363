-- e2e.lua - helpers for end-to-end specs: root detection, running the
-- moonrover binary, starting and stopping test workloads, temp files.
local C = require("moonrover.consts")

local _M = {}

_M.bin = os.getenv("MOONROVER_BIN") or "build/moonrover"
_M.lib = os.getenv("MOONROVER_LIB") or "build/libmoonrover.so"
_M.lua_dir = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/lua"
-- The build's generated modules (moonrover.consts), searched after lua_dir.
_M.generated_lua_dir = os.getenv("MOONROVER_GENERATED_LUA") or "build/generated/lua"
_M.workloads = os.getenv("MOONROVER_WORKLOADS") or "build/workloads"

local read_all = require("support.files").read
_M.read_all = read_all

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
_M.quote = shell_quote

function _M.is_root()
  local id = io.popen("id -u")
  local uid = id:read("*l")
  id:close()
  return uid == "0"
end

-- Why end-to-end specs cannot run here, or nil when they can.
function _M.skip_reason()
  if not _M.is_root() then
    return "end-to-end specs need root to load BPF programs"
  end
  local fh = io.open("/sys/kernel/btf/vmlinux", "rb")
  if not fh then
    return "this kernel has no BTF (/sys/kernel/btf/vmlinux)"
  end
  fh:close()
  return nil
end

function _M.tmpdir()
  local p = io.popen("mktemp -d /tmp/moonrover-spec.XXXXXX")
  local dir = p:read("*l")
  p:close()
  return dir
end

function _M.rmdir(dir)
  if dir and dir:match("^/tmp/moonrover%-spec%.") then
    os.execute("rm -rf " .. shell_quote(dir))
  end
end

-- A process name of dir's case alone: prefix, "_" and the unique end of the
-- name tmpdir() gave dir, so that events counted by name are never another
-- spec's or another test suite's running at the same time. At most 15
-- characters, as the kernel keeps of a process's name (comm).
function _M.own_name(dir, prefix)
  local name = prefix .. "_" .. dir:match("[^.]+$")
  assert(#name < C.MR_COMM_LEN, "longer than a comm: " .. name)
  return name
end

-- Runs a shell command; returns its exit code, stdout and stderr.
function _M.run(cmd)
  local dir = _M.tmpdir()
  local out, err = dir .. "/out", dir .. "/err"
  local status = os.execute(cmd .. " >" .. out .. " 2>" .. err)
  local stdout, stderr = read_all(out) or "", read_all(err) or ""
  _M.rmdir(dir)
  -- LuaJIT's os.execute returns the raw wait status.
  return math.floor(status / 256), stdout, stderr
end

-- Runs moonrover with the given argument words.
function _M.moonrover(words)
  local quoted = {}
  for i, w in ipairs(words) do
    quoted[i] = shell_quote(w)
  end
  return _M.run(shell_quote(_M.bin) .. " " .. table.concat(quoted, " "))
end

-- The start of a command line that runs a copy of moonrover as another user:
-- the build tree may be where only root can enter (/root is mode 700), so the
-- binary, libmoonrover.so and the Lua scripts (with the generated constants,
-- as an installed copy has them) are copied into dir, which is
-- opened to everyone. The copy loads its own library (LD_LIBRARY_PATH comes
-- before the build tree's runpath), its own scripts (MOONROVER_LUA_DIR), and
-- uses the binary's own symbols rather than MOONROVER_LIB's file.
function _M.public_copy(dir)
  local q = shell_quote
  local bin = dir .. "/moonrover"
  local code, _, err = _M.run(table.concat({ "cp", q(_M.bin), q(bin), "&& cp", q(_M.lib),
    q(dir .. "/libmoonrover.so"), "&& cp -R", q(_M.lua_dir), q(dir .. "/lua"), "&& cp",
    q(_M.generated_lua_dir .. "/moonrover/consts.lua"), q(dir .. "/lua/moonrover/"), "&& chmod -R a+rX",
    q(dir) }, " "))
  assert(code == 0, "cannot copy moonrover into " .. dir .. ": " .. err)
  return "env -u MOONROVER_LIB LD_LIBRARY_PATH=" .. q(dir) .. " MOONROVER_LUA_DIR=" ..
    q(dir .. "/lua") .. " ", q(bin)
end

-- Starts the program at path in the background; returns its pid.
local function start(path, arg_words)
  local p = io.popen(shell_quote(path) .. " " .. (arg_words or "") .. " >/dev/null 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

-- Starts a workload in the background; returns its pid.
function _M.spawn(name, arg_words)
  return start(_M.workloads .. "/" .. name, arg_words)
end

-- Starts a copy of a workload, made in dir/workloads, in the background;
-- returns its pid. The copy's command line and executable path name dir, so
-- a spec can tell its own workload from the same one run by anything else on
-- the host (another spec, another test suite).
function _M.spawn_copy(dir, name, arg_words)
  local path = dir .. "/workloads/" .. name
  local code, _, err = _M.run(string.format("mkdir -p %s && cp %s %s", shell_quote(dir .. "/workloads"),
    shell_quote(_M.workloads .. "/" .. name), shell_quote(path)))
  assert(code == 0, "cannot copy the workload " .. name .. " into " .. dir .. ": " .. err)
  return start(path, arg_words)
end

function _M.kill(pid)
  if pid then
    os.execute("kill " .. pid .. " 2>/dev/null; sleep 0.1")
  end
end

return _M
