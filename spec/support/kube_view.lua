-- kube_view.lua - for the Kubernetes client's specs: opens a client
-- (moonrover.kube.client) on a stand-in API server (support.kube_api), and
-- applies its change records to a view (objects by kind and
-- "namespace/name", the kinds synced, each record's type in order), so
-- that a spec waits for what it must see with a deadline.
local clock = require("support.clock")
local client = require("moonrover.kube.client")
local read_file = require("support.files").read

local _M = {}
local View = {}
View.__index = View

-- The longest the client may take to see a change: its backoff tops out at
-- 30 s, but every wait in these specs follows a start or a failure at most
-- a few backoffs deep.
_M.WAIT_S = 20

-- A client of stub for node_name (default "node-a"); opts adds or
-- overrides client.open options. Returns the client, or nil and why.
function _M.open(stub, opts)
  local o = { server = stub:url(), ca_pem = read_file(stub.ca), token = stub.first_token, node_name = "node-a" }
  for k, v in pairs(opts or {}) do
    o[k] = v
  end
  if o.token == false then
    o.token = nil
  end
  return client.open(o)
end

function _M.view(feed)
  return setmetatable({ feed = feed, objects = { pod = {}, service = {} }, synced = {}, types = {} }, View)
end

-- Applies every change the feed has now; returns the view.
function View:update()
  for rec in self.feed:changes() do
    self.types[#self.types + 1] = rec.type
    if rec.type == "RESET" then
      self.objects, self.synced = { pod = {}, service = {} }, {}
    elseif rec.type == "SYNCED" then
      self.synced[rec.kind] = true
    else
      local meta = rec.object.metadata
      local key = meta.namespace .. "/" .. meta.name
      self.objects[rec.kind][key] = rec.type ~= "DELETED" and rec.object or nil
      self.last = rec
    end
  end
  return self
end

-- The sorted "namespace/name" keys of kind.
function View:names(kind)
  local out = {}
  for key in pairs(self.objects[kind]) do
    out[#out + 1] = key
  end
  table.sort(out)
  return out
end

-- Waits until fn(view) is true (updating the view); that value, or nil.
function View:wait(fn, seconds)
  return clock.wait_for(function()
    return fn(self:update())
  end, seconds or _M.WAIT_S)
end

return _M
