-- End-to-end spec of capture requests (mr_data_plane_net_capture through
-- source.lua's set_capture): a real connection of a Python process
-- (spec/support/paced_sender.py) writes a head, the spec asks the kernel to
-- skip what follows up to a point inside the body, then the process writes
-- the body in pieces and a tail. The records read back carry no copy of the
-- skipped bytes, the writes wholly before the point are counted and not
-- recorded, and the offsets add up with no gap.
local e2e = require("support.e2e")
local te = require("support.trace_e2e")
local C = require("moonrover.consts")

local it = require("support.skip").guard(it, pending, te.skip_reason({ "/usr/bin/python3" }))

local PYTHON = "/usr/bin/python3"
local HEAD, PIECES, SIZE, TAIL = 100, 16, 1000, 100
local INTO_LAST = 500 -- the skip point lies this far into the last piece of the body

-- A tracer for source:drain that keeps a copy of every data record of pid.
local function collector(pid)
  local rt = require("moonrover.rt")
  local ffi = rt.ffi
  local header = ffi.sizeof("struct mr_net_data")
  local c = { records = {} }
  function c.on_tcp_event() end
  function c.on_data_run(_, base, n)
    local at = 0
    for _ = 1, n do
      local size = ffi.cast("uint32_t *", base + at)[0]
      local h = ffi.cast("struct mr_net_data *", base + at + 8)
      if h.pid == pid then
        c.records[#c.records + 1] = { conn = h.conn, role = h.role, direction = h.direction,
          offset = tonumber(h.offset), len = h.len, copied = h.copied, skipped = h.skipped, flags = h.flags,
          bytes = ffi.string(base + at + 8 + header, h.copied) }
      end
      at = at + 8 + math.ceil(size / 8) * 8
    end
  end
  return c
end

local function of(records, role, direction)
  local out = {}
  for _, r in ipairs(records) do
    if r.role == role and r.direction == direction then
      out[#out + 1] = r
    end
  end
  return out
end

describe("capture requests (end to end)", function()
  local dir, src

  before_each(function()
    dir = e2e.tmpdir()
  end)

  after_each(function()
    if src then
      src:close()
      src = nil
    end
    te.stop_all()
    e2e.rmdir(dir)
  end)

  it("copies no skipped byte, records no write wholly skipped, and keeps the offsets exact", function()
    local start, go = dir .. "/start", dir .. "/go"
    assert(os.execute("mkfifo " .. e2e.quote(start) .. " " .. e2e.quote(go)) == 0)
    local sender = te.blocked(dir, "sender", table.concat({ PYTHON,
      e2e.quote((os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/spec/support/paced_sender.py"),
      e2e.quote(start), e2e.quote(go), HEAD, PIECES, SIZE, TAIL }, " "))
    src = assert(require("moonrover.net.source").open({ pids = { sender.pid } }))
    assert(src:start())
    local seen = collector(sender.pid)
    sender.release()
    os.execute("echo go > " .. e2e.quote(start))
    local head
    te.wait_for("the head's record", function()
      src:drain(seen)
      head = of(seen.records, C.MR_ROLE_CLIENT, C.MR_NET_EGRESS)[1]
      return head ~= nil
    end)
    local skip_to = HEAD + PIECES * SIZE - (SIZE - INTO_LAST)
    assert(src:set_capture(head.conn, C.MR_NET_EGRESS, skip_to))
    local before = src:stats().kernel
    os.execute("echo go > " .. e2e.quote(go))
    sender.wait()
    te.wait_for("the tail's record", function()
      src:drain(seen)
      local sent = of(seen.records, C.MR_ROLE_CLIENT, C.MR_NET_EGRESS)
      return sent[#sent].bytes:sub(1, 1) == "t"
    end)
    local sent = of(seen.records, C.MR_ROLE_CLIENT, C.MR_NET_EGRESS)
    local function row(r)
      return { r.offset, r.len, r.skipped, r.copied, r.bytes }
    end
    assert.same({
      { 0, HEAD, 0, HEAD, ("h"):rep(HEAD) },
      { skip_to - INTO_LAST, SIZE, INTO_LAST, SIZE - INTO_LAST, ("b"):rep(SIZE - INTO_LAST) },
      { HEAD + PIECES * SIZE, TAIL, 0, TAIL, ("t"):rep(TAIL) },
    }, { row(sent[1]), row(sent[2]), row(sent[3]) })
    assert.equal(3, #sent)
    local after = src:stats().kernel
    assert.equal(PIECES - 1, after.skipped_records - before.skipped_records)
    assert.equal(skip_to - HEAD, after.skipped_bytes - before.skipped_bytes)
    -- Nothing was asked of the other end: it copied what it always copies.
    local total = 0
    for _, r in ipairs(of(seen.records, C.MR_ROLE_SERVER, C.MR_NET_INGRESS)) do
      assert.same({ total, 0, math.min(r.len, C.MR_NET_PAYLOAD_DEFAULT) }, { r.offset, r.skipped, r.copied })
      total = total + r.len
    end
    assert.equal(HEAD + PIECES * SIZE + TAIL, total)
  end)
end)
