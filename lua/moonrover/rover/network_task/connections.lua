-- connections.lua - the TCP connections of a NETWORK task's processes, from
-- the agent's "connection" stream: each one's role, ends and protocol, and
-- what it did since the last drain (bytes written and read, from the
-- running totals of its events; connects with their time; closes;
-- retransmits). A connection belongs to the task when one of its events (or
-- an exchange on it) names a process of the task: an accepted connection
-- gets its process only at its first read or write, so an accept whose
-- process is not known yet is kept aside until the connection's next event
-- says whose it is. The task's peers index (traffic.lua) follows the local
-- ends of the connections kept.
local traffic = require("moonrover.rover.network_task.traffic")

local _M = {}
local mt = { __index = _M }

local MAX_UNOWNED = 65536 -- accepts waiting for their process; beyond it all are forgotten at once, counted

-- members: pid -> member ({ pid, id, entity }); peers: traffic.peers().
function _M.new(members, peers)
  return setmetatable({ members = members, peers = peers, conns = {}, unowned = {}, unowned_count = 0,
    forgotten = 0 }, mt)
end

local function interval()
  return { write_bytes = 0, read_bytes = 0, connects = 0, connect_ns_sum = 0, connect_ns = {}, closes = 0,
    retransmits = 0 }
end

local function track(self, id, member)
  local c = { member = member, role = "unknown", protocol = "unknown", sent = 0, received = 0, cur = interval() }
  self.conns[id] = c
  return c
end

-- What ev says of c's role and ends.
local function update(self, c, role, local_addr, remote)
  if role and role ~= "unknown" then
    c.role = role
  end
  c.remote = remote or c.remote
  if local_addr and local_addr ~= c["local"] then
    if c["local"] then
      traffic.remove_local(self.peers, c["local"])
    end
    c["local"] = local_addr
    traffic.add_local(self.peers, local_addr, c.member)
  end
end

local function remember_accept(self, ev)
  if self.unowned_count >= MAX_UNOWNED then
    self.forgotten = self.forgotten + self.unowned_count
    self.unowned, self.unowned_count = {}, 0
  end
  if not self.unowned[ev.conn] then
    self.unowned_count = self.unowned_count + 1
  end
  self.unowned[ev.conn] = true
end

-- The task's connection ev.conn (made when ev names a process of the task),
-- or nil.
local function owned(self, ev)
  local c = self.conns[ev.conn]
  if c then
    return c
  end
  local member = self.members[ev.pid]
  local accepted = self.unowned[ev.conn]
  if accepted then
    self.unowned[ev.conn] = nil
    self.unowned_count = self.unowned_count - 1
  end
  if not member then
    return nil
  end
  c = track(self, ev.conn, member)
  if accepted then
    c.cur.connects = 1
  end
  return c
end

local function add_bytes(c, ev)
  local sent, received = ev.bytes_sent or c.sent, ev.bytes_received or c.received
  if sent > c.sent then
    c.cur.write_bytes = c.cur.write_bytes + sent - c.sent
    c.sent = sent
  end
  if received > c.received then
    c.cur.read_bytes = c.cur.read_bytes + received - c.received
    c.received = received
  end
end

-- One event of the "connection" stream (any process's); returns the task's
-- connection it was about, or nil.
function _M:on_event(ev)
  local kind = ev.kind
  if kind == "listen" or kind == "listen_close" or kind == "connect_failed" then
    return nil
  end
  if kind == "accept" and not self.members[ev.pid] and not self.conns[ev.conn] then
    remember_accept(self, ev)
    return nil
  end
  local c = owned(self, ev)
  if not c then
    return nil
  end
  update(self, c, ev.role, ev.local_addr, ev.remote_addr)
  add_bytes(c, ev)
  if kind == "connect" or kind == "accept" then
    c.cur.connects = c.cur.connects + 1
    if ev.connect_ns then
      c.cur.connect_ns_sum = c.cur.connect_ns_sum + ev.connect_ns
      c.cur.connect_ns[#c.cur.connect_ns + 1] = ev.connect_ns
    end
  elseif kind == "retransmit" then
    c.cur.retransmits = c.cur.retransmits + 1
  elseif kind == "close" then
    c.cur.closes = c.cur.closes + 1
    c.closed = true
  end
  return c
end

-- An exchange on a connection: it is the task's (when its process is), and
-- its protocol is known.
function _M:on_exchange(ex)
  local c = owned(self, ex)
  if c then
    update(self, c, ex.role, ex["local"], ex.remote)
    c.protocol = ex.protocol
  end
  return c
end

local function empty(cur)
  return cur.write_bytes == 0 and cur.read_bytes == 0 and cur.connects == 0 and cur.closes == 0
    and cur.retransmits == 0
end

-- Calls fn(connection, counts) for each connection that did something since
-- the last drain, then starts a new interval.
function _M:drain(fn)
  for _, c in pairs(self.conns) do
    if not empty(c.cur) then
      fn(c, c.cur)
      c.cur = interval()
    end
  end
end

-- Forgets the closed connections (after a drain: what they did until their
-- close has been counted, and the labels of that report named their ends).
function _M:forget_closed()
  for id, c in pairs(self.conns) do
    if c.closed then
      self.conns[id] = nil
      if c["local"] then
        traffic.remove_local(self.peers, c["local"])
      end
    end
  end
end

return _M
