-- task_command.lua - reads OAP's EBPFProfilingTaskQuery commands into task
-- tables, tolerating what OAP really sends (SerialNumber, ExtensionConfigJSON
-- = "null", process ids in any order). Arguments are looked up by key.
local _M = {}

_M.COMMAND = "EBPFProfilingTaskQuery"

local REQUIRED = { "TaskId", "ProcessId", "TaskUpdateTime", "TriggerType", "TargetType", "TaskStartTime",
  "ExtensionConfigJSON" }
local TARGETS = { ON_CPU = true, OFF_CPU = true, NETWORK = true }

-- A command's args (a list of { key, value }) as a table from key to value;
-- entries that are not such pairs are left out.
function _M.args_by_key(args)
  local by_key = {}
  for _, a in ipairs(args or {}) do
    if type(a) == "table" and type(a.key) == "string" then
      by_key[a.key] = a.value
    end
  end
  return by_key
end

local function integer(text)
  local n = type(text) == "string" and text:match("^%s*(%-?%d+)%s*$")
  return n and tonumber(n)
end

local function split_ids(text)
  local ids = {}
  for id in tostring(text):gmatch("[^,]+") do
    id = id:match("^%s*(.-)%s*$")
    if id ~= "" then
      ids[#ids + 1] = id
    end
  end
  table.sort(ids)
  return ids
end

local function check_required(a)
  for _, key in ipairs(REQUIRED) do
    if a[key] == nil then
      return nil, "argument " .. key .. " is missing"
    end
  end
  if a.TriggerType ~= "FIXED_TIME" then
    return nil, "trigger type " .. tostring(a.TriggerType) .. " is not supported (only FIXED_TIME)"
  end
  if not TARGETS[a.TargetType] then
    return nil, "target type " .. tostring(a.TargetType) .. " is unknown"
  end
  return true
end

local function numbers(a)
  local update, start = integer(a.TaskUpdateTime), integer(a.TaskStartTime)
  local duration = integer(a.FixedTriggerDuration)
  if not update or not start then
    return nil, "TaskUpdateTime and TaskStartTime must be integers (epoch ms)"
  end
  if not duration or duration <= 0 then
    return nil, "FixedTriggerDuration must be a positive number of seconds, got " .. tostring(a.FixedTriggerDuration)
  end
  return update, start, duration
end

-- cmd = { command = name, args = { { key =, value = }, ... } }. Returns a task:
-- { id, process_ids (sorted), update_time (ms), start_time (ms), duration_ms,
--   trigger, target, extension_json (nil for "null") }, or nil and why.
function _M.parse(cmd)
  if type(cmd) ~= "table" or cmd.command ~= _M.COMMAND then
    return nil, "not an " .. _M.COMMAND .. " command"
  end
  local a = _M.args_by_key(cmd.args)
  local ok, err = check_required(a)
  if not ok then
    return nil, err
  end
  local update, start, duration = numbers(a)
  if not update then
    return nil, start
  end
  local ids = split_ids(a.ProcessId)
  if #ids == 0 then
    return nil, "ProcessId names no process"
  end
  return {
    id = a.TaskId,
    process_ids = ids,
    update_time = update,
    start_time = start,
    duration_ms = duration * 1000,
    trigger = a.TriggerType,
    target = a.TargetType,
    extension_json = (a.ExtensionConfigJSON ~= "null" and a.ExtensionConfigJSON ~= "") and a.ExtensionConfigJSON or nil,
  }
end

-- What a task is, for "at most one task per process set and target".
-- Process ids are sorted, so their order in the command does not matter.
function _M.identity(task)
  return table.concat(task.process_ids, ",") .. "|" .. task.target .. "|" .. task.trigger .. "|" ..
    (task.origin or "oap")
end

-- Re-delivery of the same task (possibly with a longer duration): same id,
-- processes, start time, target and trigger.
function _M.same(a, b)
  return a.id == b.id and a.start_time == b.start_time and a.target == b.target and a.trigger == b.trigger
    and table.concat(a.process_ids, ",") == table.concat(b.process_ids, ",")
end

return _M
