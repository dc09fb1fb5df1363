-- check_command.lua - `moonrover check`: says, feature by feature, whether this
-- machine can run the agent, and what to do about each missing feature.
local rt = require("moonrover.rt")

local _M = {
  summary = "check whether this machine can run moonrover",
  usage = "moonrover check",
  description = "Tries each kernel feature moonrover uses (for real: load, attach, fire) and\n" ..
    "prints what to do about each one that is missing. Exits 1 if a required one is missing.",
  options = {},
}

-- What each feature the runtime probes (runtime/kernel/check.c) is for,
-- whether the agent cannot work without it, and what to do when it is missing.
_M.FEATURES = {
  root = { what = "privileges", required = true, fix = "run moonrover as below" },
  btf = { what = "kernel BTF type information", required = true,
    fix = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distributions since 2021)" },
  perf_event = { what = "perf_event cpu-clock sampling (on-CPU profiles)", required = true,
    fix = "allow perf events: check perf_event_paranoid and that no seccomp/LSM policy blocks perf_event_open" },
  tracepoint = { what = "tracepoints (process and network events)", required = true,
    fix = "mount tracefs and use a kernel with CONFIG_TRACEPOINTS=y" },
  tp_btf = { what = "BTF-typed tracepoints (off-CPU profiles)", required = false,
    fix = "needs Linux 5.5+ with BTF; off-CPU profiling is unavailable without it" },
  uprobe = { what = "uprobes (TLS payloads from OpenSSL)", required = false,
    fix = "use a kernel with CONFIG_UPROBES=y; TLS tracing is unavailable without it" },
  ringbuf = { what = "BPF ring buffer (event streams)", required = true,
    fix = "needs Linux 5.8 or newer" },
  network = { what = "network tracer (TCP connections and their bytes: trace, HTTP metrics)", required = false,
    fix = "needs the sock:inet_sock_set_state, sock_send_length and sock_recv_length tracepoints with BTF "
      .. "(Linux 6.3+); the agent runs without network tracing otherwise" },
  cfi_unwind = { what = "CFI unwinding (whole user stacks without frame pointers)", required = false,
    fix = "profiles fall back to frame pointers: run them with --unwind fp" },
  kallsyms = { what = "kernel symbols (/proc/kallsyms)", required = false,
    fix = "run as root with kernel.kptr_restrict <= 1; kernel frames stay unnamed without it" },
}

-- The names of the features the runtime probes, in its order.
function _M.runtime_features()
  local names, i = {}, 0
  while true do
    local name = rt.lib.mr_kernel_feature(i)
    if name == nil then
      return names
    end
    names[#names + 1] = rt.ffi.string(name)
    i = i + 1
  end
end

local EPERM = 1

-- Runs every probe the runtime has; returns a list of { name, feature, ok,
-- denied (this user may not use it), detail }. A feature without a
-- description here is a bug, said as such.
function _M.probe_all()
  local ffi, lib = rt.ffi, rt.lib
  local detail = ffi.new("char[512]")
  local results = {}
  for _, name in ipairs(_M.runtime_features()) do
    local rc = lib.mr_kernel_check(name, detail, 512)
    local feature = _M.FEATURES[name] or { what = "(undescribed feature: a moonrover bug)", required = true,
      fix = "report this" }
    results[#results + 1] = { name = name, feature = feature, ok = rc == 1, denied = rc == -EPERM,
      detail = ffi.string(detail) }
  end
  return results
end

-- What moonrover needs to be allowed to work (the same words everywhere).
function _M.privileges()
  return rt.ffi.string(rt.lib.mr_kernel_privileges())
end

-- The text of the results. A feature this user may not use points to the
-- one line that says what moonrover needs (privileges, from the runtime);
-- returns the text and how many required features are missing.
function _M.report(results, privileges)
  local lines, missing_required, denied = {}, 0, 0
  for _, r in ipairs(results) do
    local f = r.feature
    local mark = r.ok and "ok  " or (f.required and "FAIL" or "warn")
    lines[#lines + 1] = string.format("%s  %-11s %s: %s", mark, r.name, f.what, r.detail)
    if not r.ok then
      lines[#lines + 1] = "              what to do: " .. (r.denied and "run moonrover as below" or f.fix)
      missing_required = missing_required + (f.required and 1 or 0)
      denied = denied + (r.denied and 1 or 0)
    end
  end
  if denied > 0 then
    lines[#lines + 1] = string.format("\n%d feature(s) could not be tried by this user: moonrover needs %s.",
      denied, privileges)
  end
  if missing_required == 0 then
    lines[#lines + 1] = "\nThis machine can run moonrover."
  else
    lines[#lines + 1] = string.format("\n%d required feature(s) missing: moonrover cannot run here.",
      missing_required)
  end
  return table.concat(lines, "\n") .. "\n", missing_required
end

function _M.run()
  local text, missing = _M.report(_M.probe_all(), _M.privileges())
  io.stdout:write(text)
  return missing == 0 and 0 or 1
end

return _M
