-- kube_template.lua - the render contexts of Rover's Kubernetes analyzers
-- on lib/go_template.lua, with the semantics of Rover's own methods:
--
--   filters:  .Process  .Pod (all below, and HasContainer "c",
--             LabelSelector "k=v,k2=v2", HasServiceName, HasOwnerName "Kind,...")
--             .Container
--   names:    .Rover (InstanceID, HostIPV4 "if", HostIPV6 "if", HostName)
--             .Process (ExeFilePath, ExeName, CommandLine, Pid, WorkDir,
--                       ExeNameInCommandLine)
--             .Pod (Name, Namespace, Node, LabelValue "k1,k2" "default" (or
--                   without a default, as before Rover 0.6),
--                   ServiceName, FindContainer "c", OwnerName "Kind1,Kind2")
--             .Container (Name, ID, EnvValue "A,B")
-- As in Rover, a filter has no .Rover and a name template none of the
-- Has*/LabelSelector judgments.
--
-- ctx (kube_finder.lua builds it):
--   ctx.process, ctx.rover    as host_template.lua reads them; ctx.rover.ipv6(name)
--                             gives an interface's IPv6 address or nil
--   ctx.pod, ctx.status       the Pod object and the containerStatuses entry
--   ctx.spec                  the pod's spec container of that status
--   ctx.index                 the pod index (kube/pods.lua): service_name, owners
--   ctx.pending               set to true when an owner is still being fetched
--                             (the render fails; the process is tried again later)
local go_template = require("moonrover.lib.go_template")
local host_template = require("moonrover.rover.host_template")
local pods = require("moonrover.kube.pods")

local _M = {}

local CONTAINER_FIELDS = { Name = 0, ID = 0, EnvValue = 1 }
local POD_FIELDS = { Name = 0, Namespace = 0, Node = 0, LabelValue = { args = { 1, 2 } }, ServiceName = 0,
  FindContainer = { args = 1, fields = CONTAINER_FIELDS }, OwnerName = 1 }
local JUDGMENT_FIELDS = { HasContainer = 1, LabelSelector = 1, HasServiceName = 0, HasOwnerName = 1 }
for k, v in pairs(POD_FIELDS) do
  JUDGMENT_FIELDS[k] = v
end
local ROVER_FIELDS = { HostIPV6 = 1 }
for k, v in pairs(host_template.ROVER_FIELDS) do
  ROVER_FIELDS[k] = v
end

local FIELDS = {
  filter = {
    Process = { args = 0, fields = host_template.PROCESS_FIELDS },
    Pod = { args = 0, fields = JUDGMENT_FIELDS },
    Container = { args = 0, fields = CONTAINER_FIELDS },
  },
  name = {
    Rover = { args = 0, fields = ROVER_FIELDS },
    Process = { args = 0, fields = host_template.PROCESS_FIELDS },
    Pod = { args = 0, fields = POD_FIELDS },
    Container = { args = 0, fields = CONTAINER_FIELDS },
  },
}

-- Go's strings.Split(s, ","): every piece, empty ones too.
local function split(s)
  local out = {}
  for piece in (s .. ","):gmatch("([^,]*),") do
    out[#out + 1] = piece
  end
  return out
end

-- A list as Go's %v prints a []string.
local function go_list(list)
  return "[" .. table.concat(list, " ") .. "]"
end

local function container(spec, status)
  return {
    Name = function() return spec.name or "" end,
    ID = function() return status.containerID or "" end,
    EnvValue = function(_, names)
      local wanted = split(names)
      local actual = {}
      for _, env in ipairs(spec.env or {}) do
        for _, name in ipairs(wanted) do
          if env.name == name then
            return env.value or ""
          end
        end
        actual[#actual + 1] = env.name
      end
      return nil, string.format("could not found matches environment, want names: %s, actual names: %s",
        go_list(wanted), go_list(actual))
    end,
  }
end

-- The pod's spec container named name, or nil: only spec.containers, since
-- Rover pairs a status with those alone (not init or ephemeral containers).
local function spec_of(pod, name)
  for _, c in ipairs(pod.spec and pod.spec.containers or {}) do
    if c.name == name then
      return c
    end
  end
  return nil
end

-- The containerStatuses entry of the container named name, or nil.
local function status_of(pod, name)
  for _, s in ipairs(pod.status and pod.status.containerStatuses or {}) do
    if s.name == name then
      return s
    end
  end
  return nil
end

_M.spec_of = spec_of

local function labels_of(pod)
  return pod.metadata and pod.metadata.labels or {}
end

-- A label key or value as the API accepts it (prefix/name; value may be empty).
local function valid_label(text, is_key)
  if text == "" then
    return not is_key
  end
  local pattern = is_key and "^[%w]([%w%-_%./]*[%w])$" or "^[%w]([%w%-_%.]*[%w])$"
  return #text <= (is_key and 317 or 63) and (text:find(pattern) ~= nil or text:find("^[%w]$") ~= nil)
end

-- Kubernetes' ConvertSelectorToLabelsMap: "k=v,k2=v2" as a table, or nil, err.
local function selector_map(selector)
  local map = {}
  if selector == "" then
    return map
  end
  for _, pair in ipairs(split(selector)) do
    local parts = {}
    for part in (pair .. "="):gmatch("([^=]*)=") do
      parts[#parts + 1] = part
    end
    if #parts ~= 2 then
      return nil, "invalid selector: " .. go_list(parts)
    end
    local key, value = parts[1]:match("^%s*(.-)%s*$"), parts[2]:match("^%s*(.-)%s*$")
    if not valid_label(key, true) then
      return nil, string.format("invalid label key %q", key)
    end
    if not valid_label(value, false) then
      return nil, string.format("invalid label value %q for key %q", value, key)
    end
    map[key] = value
  end
  return map
end

local function service_name(ctx)
  return ctx.index:service_name(ctx.pod) or ""
end

-- Rover's OwnerName: for each kind in order, "service" (any case) is the
-- pod's service, any other kind the first owner of exactly that kind found
-- walking up the owner references.
local function owner_name(ctx, kinds)
  local list = split(kinds)
  local owners
  for _, kind in ipairs(list) do
    if kind:lower() == "service" then
      local s = service_name(ctx)
      if s ~= "" then
        return s
      end
    else
      if not owners then
        local why
        owners, why = ctx.index:owners(ctx.pod)
        if not owners then
          if why == "pending" then
            ctx.pending = true
            return nil, "the pod's owners are still being fetched"
          end
          return nil, why
        end
      end
      for _, owner in ipairs(owners) do
        if owner.kind == kind then
          return owner.name
        end
      end
    end
  end
  return nil, "could not found owner in " .. go_list(list)
end

local function pod_object(ctx, judgment)
  local pod = ctx.pod
  local meta = pod.metadata or {}
  local o = {
    Name = function() return meta.name or "" end,
    Namespace = function() return meta.namespace or "" end,
    Node = function() return pod.spec and pod.spec.nodeName or "" end,
    -- Rover before 0.6 had no default: no label was an error.
    LabelValue = function(_, names, default)
      local labels = labels_of(pod)
      local wanted = split(names)
      for _, name in ipairs(wanted) do
        if (labels[name] or "") ~= "" then
          return labels[name]
        end
      end
      if default == nil then
        local actual = {}
        for k in pairs(labels) do
          actual[#actual + 1] = k
        end
        table.sort(actual)
        return nil, string.format("could not found matches label, want names: %s, actual names: %s", go_list(wanted),
          go_list(actual))
      end
      return default
    end,
    ServiceName = function() return service_name(ctx) end,
    FindContainer = function(_, name)
      local spec, status = spec_of(pod, name), status_of(pod, name)
      if not (spec and status) then
        return nil, "could not found the container"
      end
      return container(spec, status)
    end,
    OwnerName = function(_, kinds) return owner_name(ctx, kinds) end,
  }
  if judgment then
    o.HasContainer = function(_, name) return spec_of(pod, name) ~= nil end
    o.LabelSelector = function(_, selector)
      local map, err = selector_map(selector)
      if not map then
        return nil, err
      end
      return pods.labels_match(map, labels_of(pod))
    end
    o.HasServiceName = function() return service_name(ctx) ~= "" end
    o.HasOwnerName = function(_, kinds)
      local name = owner_name(ctx, kinds)
      if ctx.pending then
        return nil, "the pod's owners are still being fetched"
      end
      return (name or "") ~= ""
    end
  end
  return o
end

local function rover_object(ctx)
  local o = host_template.rover(ctx.rover)
  o.HostIPV6 = function(_, name)
    local address = ctx.rover.ipv6 and ctx.rover.ipv6(name)
    if (address or "") == "" then
      return nil, "could not found the ip v6 address from " .. tostring(name)
    end
    return address
  end
  return o
end

local Template = {}
Template.__index = Template

local function data(self, ctx)
  return {
    Rover = self.kind == "name" and rover_object(ctx) or nil,
    Process = host_template.process(ctx.process),
    Pod = pod_object(ctx, self.kind == "filter"),
    Container = container(ctx.spec, ctx.status),
  }
end

-- The text of a name template for ctx, or nil and the error.
function Template:render(ctx)
  return self.tpl:render(data(self, ctx))
end

-- Whether ctx passes a filter, or nil and the error.
function Template:test(ctx)
  return self.tpl:test(data(self, ctx))
end

-- A name template (kind "name") or a filter expression (kind "filter"),
-- called name in errors; or nil and the error.
function _M.compile(text, kind, name)
  local opts = { name = name, fields = FIELDS[kind] }
  local tpl, err
  if kind == "filter" then
    tpl, err = go_template.filter(text, opts)
  else
    tpl, err = go_template.compile(text, opts)
  end
  if not tpl then
    return nil, err
  end
  return setmetatable({ tpl = tpl, kind = kind }, Template)
end

return _M
