-- profilable.lua - the support_ebpf_profiling property of a reported
-- process: OAP sends ON_CPU/OFF_CPU tasks only to processes that report
-- "true", which Rover gives an executable that has an ELF symbol table and
-- is not an interpreter or shell whose stacks profiling cannot name. Reading
-- ELF files is not free: answers are kept per process and executable for as
-- long as scans keep seeing them.
--
--   local p = profilable.new(sys.has_symbols)
--   p:check(pid, ident, exe_path)   -- "true" / "false"; ident: pid and start time
--   p:scanned()                     -- after a full scan: forget what it did not see
local _M = {}
local mt = { __index = _M }

-- Rover reports "false" for executables whose name starts with these.
local NOT_PROFILABLE = { "java", "python", "node", "bash", "ruby", "ssh" }

function _M.new(has_symbols)
  return setmetatable({ has_symbols = has_symbols, kept = {}, seen = {} }, mt)
end

function _M:check(pid, ident, exe_path)
  local key = ident .. "/" .. exe_path
  local answer = self.seen[key]
  if answer == nil then
    answer = self.kept[key]
  end
  if answer == nil then
    answer = self.has_symbols(pid)
  end
  self.seen[key] = answer
  if not answer then
    return "false"
  end
  local name = exe_path:match("([^/]*)$")
  for _, prefix in ipairs(NOT_PROFILABLE) do
    if name:sub(1, #prefix) == prefix then
      return "false"
    end
  end
  return "true"
end

function _M:scanned()
  self.kept, self.seen = self.seen, {}
end

return _M
