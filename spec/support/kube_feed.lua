-- kube_feed.lua - a fake of the Kubernetes client's feed
-- (moonrover.kube.client: changes() and get(path)) for unit specs:
-- records pushed are what the next changes() yields, and objects put by API
-- path are answered by get() only once released (before that, "pending", as
-- the client answers while its GET is under way).
--
--   local feed = kube_feed.new()
--   feed:add("pod", kube_api.pod{...}); feed:synced("pod")
--   local rs = feed:put_owner(kube_api.owner({ kind = "ReplicaSet", namespace = "shop", name = "cart-7d9" }))
--   local job = feed:put_owners("ops", { { "CronJob", "backup" }, { "Job", "backup-1" } })
--   feed:release()          -- every get() of what was put now answers
local objects = require("support.kube.objects")
local pods = require("moonrover.kube.pods")

local _M = {}
local Feed = {}
Feed.__index = Feed

function _M.new()
  return setmetatable({ queue = {}, objects = {}, released = {}, gets = {}, uids = 0 }, Feed)
end

-- The next uid, as the API server fills it.
function Feed:uid()
  self.uids = self.uids + 1
  return string.format("00000000-0000-4000-8000-%012d", self.uids)
end

function Feed:push(rec)
  self.queue[#self.queue + 1] = rec
end

-- obj (given a uid when it has none) as an ADDED record of kind; returns obj.
function Feed:add(kind, obj)
  obj.metadata.uid = obj.metadata.uid or self:uid()
  self:push({ kind = kind, type = "ADDED", object = obj })
  return obj
end

function Feed:modify(kind, obj)
  self:push({ kind = kind, type = "MODIFIED", object = obj })
end

function Feed:delete(kind, obj)
  self:push({ kind = kind, type = "DELETED", object = obj })
end

function Feed:synced(kind)
  self:push({ kind = kind, type = "SYNCED" })
end

-- A RESET followed by each { kind, obj } of list as ADDED.
function Feed:reset(list)
  self:push({ type = "RESET" })
  for _, entry in ipairs(list) do
    self:push({ kind = entry[1], type = "ADDED", object = entry[2] })
  end
end

-- An iterator over the records pushed since the last call.
function Feed:changes()
  local list, i = self.queue, 0
  self.queue = {}
  return function()
    i = i + 1
    return list[i]
  end
end

-- Stores obj (a table, or false: the API answers 404) at path.
function Feed:put(path, obj)
  self.objects[path] = obj
end

-- Stores an owner (objects.owner) at its API path with a uid; returns it.
function Feed:put_owner(owner)
  owner.metadata.uid = self:uid()
  local ref = objects.owner_ref(owner)
  self:put(pods.owner_path(ref, owner.metadata.namespace), owner)
  return owner
end

-- Puts a chain of owners in namespace, each owned by the one before it
-- (chain: { { kind, name }, ... }, the top owner first); the last one.
function Feed:put_owners(namespace, chain)
  local owner
  for _, link in ipairs(chain) do
    owner = self:put_owner(objects.owner({ kind = link[1], namespace = namespace, name = link[2], owner = owner }))
  end
  return owner
end

-- Lets get() answer for path (every path put so far when nil).
function Feed:release(path)
  if path then
    self.released[path] = true
    return
  end
  for p in pairs(self.objects) do
    self.released[p] = true
  end
end

-- The object at path, or nil and "pending" (not released yet) or "not found".
function Feed:get(path)
  self.gets[path] = (self.gets[path] or 0) + 1
  if not self.released[path] then
    return nil, "pending"
  end
  local obj = self.objects[path]
  if not obj then
    return nil, "not found"
  end
  return obj
end

return _M
