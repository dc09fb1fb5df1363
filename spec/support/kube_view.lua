-- kube_view.lua - for the Kubernetes client's specs: opens a client
-- (moonrover.kube.client) on a stand-in API server (support.kube_api), and
-- applies its change records to a view (objects by kind and
-- "namespace/name", the kinds synced, each record's type in order), so
-- that a spec waits for what it must see with a deadline. A case holds a
-- stand-in and the client a spec case opens on it, for after_each to stop.
local clock = require("support.clock")
local client = require("moonrover.kube.client")
local e2e = require("support.e2e")
local kube_api = require("support.kube_api")
local read_file = require("support.files").read

local _M = {}
local View = {}
View.__index = View
local Case = {}
Case.__index = Case

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

-- For a describe block: registers hooks that give each of its cases a
-- stand-in API server with the Node "node-a" (case.stub), and stop it and
-- the client case:open() gave after the case. Returns the case.
function _M.each_case(before_each, after_each)
  local case = setmetatable({}, Case)
  before_each(function()
    case.stub, case.feed = assert(kube_api.start({ node = "node-a" })), nil
  end)
  after_each(function()
    case:stop()
  end)
  return case
end

-- A client of the case's stand-in (as _M.open), closing the one opened
-- before; the client, or nil and why.
function Case:open(opts)
  if self.feed then
    self.feed:close()
  end
  local feed, err = _M.open(self.stub, opts)
  self.feed = feed
  return feed, err
end

-- Closes the client, stops the stand-in and removes its files.
function Case:stop()
  if self.feed then
    self.feed:close()
  end
  self.stub:stop()
  e2e.rmdir(self.stub.dir)
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
