-- finder_facts.lua - the system facts process discovery reads (the `sys` table that
-- process_finder.lua documents), backed by the runtime: /proc (or the host's
-- /proc named by ROVER_HOST_PROC_MAPPING), POSIX regex, host name and address.
local rt = require("moonrover.rt")

local _M = {}

local BUF = 65536
local MAX_PIDS = 65536
local MAX_GROUPS = 10

local ffi, lib = rt.ffi, rt.lib
local buf = ffi.new("char[?]", BUF)

-- The live pids, or nil and why.
function _M.list_pids()
  local pids = ffi.new("int32_t[?]", MAX_PIDS)
  local n, err = rt.call(lib.mr_proc_list, pids, MAX_PIDS)
  if not n then
    return nil, err
  end
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = pids[i]
  end
  return out
end

-- A file of /proc/PID ("cmdline", "comm", ...), or nil and why (the
-- process may have exited).
function _M.read(pid, file)
  local n, err = rt.call(lib.mr_proc_read, pid, file, buf, BUF)
  return n and ffi.string(buf, n), err
end

local function link(pid, what)
  local n, err = rt.call(lib.mr_proc_link, pid, what, buf, BUF)
  return n and ffi.string(buf, n), err
end

function _M.exe(pid)
  return link(pid, "exe")
end

function _M.cwd(pid)
  return link(pid, "cwd")
end

function _M.self_pid()
  return lib.mr_proc_self()
end

function _M.start_ns(pid)
  return tonumber(lib.mr_proc_start_ns(pid))
end

-- Whether the executable has a symbol table, or nil and why.
function _M.has_symbols(pid)
  local r, err = rt.call(lib.mr_proc_has_symbols, pid)
  if not r then
    return nil, err
  end
  return r == 1
end

local Matcher = {}
Matcher.__index = Matcher

-- The captures of a match (the whole match first), or nil.
function Matcher:match(s)
  local groups = ffi.new("int32_t[?]", 2 * MAX_GROUPS)
  if rt.call(lib.mr_regex_match, self.re, s, groups, MAX_GROUPS) ~= 1 then
    return nil
  end
  local out = {}
  for i = 0, MAX_GROUPS - 1 do
    local a, b = groups[2 * i], groups[2 * i + 1]
    if a < 0 then
      break
    end
    out[#out + 1] = s:sub(a + 1, b)
  end
  return out
end

function _M.regex(pattern)
  local re, err = rt.call(lib.mr_regex_new, pattern)
  if not re then
    return nil, err
  end
  return setmetatable({ re = ffi.gc(re, lib.mr_regex_free) }, Matcher)
end

-- This host's first IPv4 address that is not loopback ("" when it has none
-- or the interfaces cannot be listed).
function _M.host_ip()
  return rt.call(lib.mr_sys_ipv4, buf, BUF) and ffi.string(buf) or ""
end

-- The first IPv4 address of the interface named name, or nil when there is
-- no such interface, it has none, or the interfaces cannot be listed.
function _M.host_ipv4(name)
  local ok = rt.call(lib.mr_sys_ipv4_of, name, buf, BUF)
  local address = ok and ffi.string(buf) or ""
  return address ~= "" and address or nil
end

-- An IPv6 address in its shortest text form (RFC 5952) from 32 hex digits.
local function ipv6_text(hex)
  local groups = {}
  for i = 1, 32, 4 do
    groups[#groups + 1] = string.format("%x", tonumber(hex:sub(i, i + 3), 16))
  end
  local best, best_len, run, run_len = nil, 1, nil, 0
  for i = 1, 9 do
    if groups[i] == "0" then
      run, run_len = run or i, run_len + 1
    else
      if run_len > best_len then
        best, best_len = run, run_len
      end
      run, run_len = nil, 0
    end
  end
  if not best then
    return table.concat(groups, ":")
  end
  return table.concat(groups, ":", 1, best - 1) .. "::" .. table.concat(groups, ":", best + best_len)
end

-- The first global IPv6 address of interface name, as /proc/net/if_inet6
-- lists them (this agent's network namespace, the host's with hostNetwork),
-- or nil.
function _M.host_ipv6(name)
  local f = io.open("/proc/net/if_inet6", "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  for hex, scope, ifname in (text or ""):gmatch("(%x+) %x+ %x+ (%x+) %x+%s+(%S+)") do
    if ifname == name and scope == "00" and #hex == 32 then
      return ipv6_text(hex)
    end
  end
  return nil
end

function _M.hostname()
  return rt.call(lib.mr_sys_hostname, buf, BUF) and ffi.string(buf) or ""
end

function _M.now_ms()
  return lib.mr_sys_epoch_ms()
end

return _M
