-- net_address_spec.lua - "ip:port" text of the network records' addresses.
local ffi = require("ffi")
local address = require("moonrover.net.address")

local function bytes(list)
  local b = ffi.new("uint8_t[16]")
  for i, v in ipairs(list) do
    b[i - 1] = v
  end
  return b
end

local V6 = 10

describe("network addresses", function()
  it("writes IPv4 as a.b.c.d:port", function()
    assert.equal("127.0.0.1:80", address.format(bytes({ 127, 0, 0, 1 }), 2, 80))
    assert.equal("10.255.0.7:65535", address.format(bytes({ 10, 255, 0, 7 }), 2, 65535))
  end)

  it("writes IPv6 in brackets, in the short form of RFC 5952", function()
    local loopback = bytes({ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 })
    assert.equal("[::1]:8080", address.format(loopback, V6, 8080))
    assert.equal("[::]:1", address.format(bytes({}), V6, 1))
    assert.equal("[fe80::]:1", address.format(bytes({ 0xfe, 0x80 }), V6, 1))
    -- the first of two equally long zero runs is the one shortened
    local two_runs = bytes({ 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1 })
    assert.equal("[2001:db8::1:0:0:1]:53", address.format(two_runs, V6, 53))
    -- a single zero group is not shortened
    local one_zero = bytes({ 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1 })
    assert.equal("[2001:db8:0:1:1:1:1:1]:53", address.format(one_zero, V6, 53))
  end)

  it("writes an IPv4-mapped IPv6 address as IPv4", function()
    local mapped = bytes({ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2 })
    assert.equal("192.168.1.2:443", address.format(mapped, V6, 443))
  end)
end)
