-- e2e.lua - helpers for end-to-end specs: root detection, running the
-- moonrover binary, starting and stopping test workloads, temp files.
local _M = {}

_M.bin = os.getenv("MOONROVER_BIN") or "build/moonrover"
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

-- Starts a workload in the background; returns its pid.
function _M.spawn(name, arg_words)
  local cmd = shell_quote(_M.workloads .. "/" .. name) .. " " .. (arg_words or "")
  local p = io.popen(cmd .. " >/dev/null 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

function _M.kill(pid)
  if pid then
    os.execute("kill " .. pid .. " 2>/dev/null; sleep 0.1")
  end
end

return _M
