-- Specs for net/destination_filter.lua: address parsing and the connections
-- and listening sockets coroot-compatible metrics leave out.
local filter = require("moonrover.net.destination_filter")

describe("destination_filter addresses", function()
  it("splits ip:port and [ipv6]:port", function()
    assert.same({ "10.0.0.1", 80 }, { filter.split_addr("10.0.0.1:80") })
    assert.same({ "fe80::1", 443 }, { filter.split_addr("[fe80::1]:443") })
    for _, bad in ipairs({ "10.0.0.1", "fe80::1:80", "[::1]", "10.0.0.1:70000", "", false }) do
      assert.is_nil(filter.split_addr(bad), tostring(bad))
    end
  end)

  it("reads IPv4, IPv6 and IPv4-mapped addresses", function()
    assert.same({ 192, 168, 1, 20 }, filter.ip_bytes("192.168.1.20"))
    assert.same({ 10, 1, 2, 3 }, filter.ip_bytes("::ffff:10.1.2.3"))
    assert.same({ 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, filter.ip_bytes("2001:db8::1"))
    assert.same({ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, filter.ip_bytes("::1"))
    assert.same({ 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, filter.ip_bytes("fe80::"))
    assert.same({ 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8 }, filter.ip_bytes("1:2:3:4:5:6:7:8"))
    for _, bad in ipairs({ "256.1.1.1", "1.2.3", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "g::1", "1:2:3:4:5:6:7::8",
      "example.com" }) do
      assert.is_nil(filter.ip_bytes(bad), bad)
    end
  end)

  it("reads networks and port ranges, and says what is wrong with bad ones", function()
    assert.same({ { 10, 0, 0, 0 }, 8 }, filter.parse_network("10.0.0.0/8"))
    assert.same({ nil, "invalid network '10.0.0.0/33' (expected ip/bits, such as 203.0.113.0/24)" },
      { filter.parse_network("10.0.0.0/33") })
    assert.same({ { 1, 2 }, { 5, 9 } }, filter.parse_port_ranges("1-2, 5-9"))
    assert.same({}, filter.parse_port_ranges(""))
    assert.same({ nil, "invalid port range '80' (expected FROM-TO, such as 32768-60999)" },
      { filter.parse_port_ranges("80") })
  end)
end)

describe("destination_filter rules", function()
  local f = assert(filter.new())

  it("keeps private, loopback and carrier-grade NAT destinations on service ports", function()
    for _, addr in ipairs({ "10.1.2.3:5432", "172.31.255.255:80", "192.168.0.1:443", "100.127.0.1:80",
      "127.0.0.53:53", "[::1]:8080", "[fc00::5]:80", "[fdff:ffff::1]:9000", "10.0.0.1:32767", "10.0.0.1:50051" }) do
      assert.is_false(f:skip_destination(addr), addr)
    end
  end)

  it("skips ephemeral ports, link-local and public destinations", function()
    for _, addr in ipairs({ "10.0.0.1:32768", "10.0.0.1:60999", "169.254.169.254:80", "[fe80::1]:80",
      "[febf::1]:80", "172.32.0.1:80", "1.1.1.1:443", "[2606:4700::1111]:443", "[::ffff:1.1.1.1]:443" }) do
      assert.is_true(f:skip_destination(addr), addr)
    end
    assert.same({ true, "bad_address" }, { f:skip_destination("nowhere:80") })
  end)

  it("keeps public networks it is told to", function()
    local g = assert(filter.new({ public_networks = { "1.1.1.0/31", "2606:4700::/32" } }))
    assert.is_false(g:skip_destination("1.1.1.1:443"))
    assert.is_true(g:skip_destination("1.1.1.2:443"))
    assert.is_false(g:skip_destination("[2606:4700:10::1]:443"))
  end)

  it("gives the same verdicts when it is asked again (they are kept by address)", function()
    local g = assert(filter.new())
    for _ = 1, 3 do
      assert.is_false(g:skip_destination("10.1.2.3:5432"))
      assert.same({ true }, { g:skip_destination("1.1.1.1:443") })
      assert.same({ true, "bad_address" }, { g:skip_destination("nowhere:80") })
      assert.same({ true, "bad_address" }, { g:skip_destination(nil) })
    end
  end)

  it("keeps judging right past the number of verdicts it keeps", function()
    local g = assert(filter.new())
    for i = 1, 10000 do
      local private = ("10.%d.%d.1:80"):format(math.floor(i / 256), i % 256)
      local public = ("8.%d.%d.1:80"):format(math.floor(i / 256), i % 256)
      assert.is_false(g:skip_destination(private), private)
      assert.is_true(g:skip_destination(public), public)
    end
    assert.is_true(g.n_verdicts <= 4096)
  end)

  it("skips listening sockets on ephemeral ports only", function()
    assert.is_false(f:skip_listen("0.0.0.0:80"))
    assert.is_false(f:skip_listen("[::]:50051"))
    assert.is_true(f:skip_listen("127.0.0.1:45000"))
    assert.same({ true, "bad_address" }, { f:skip_listen("*:80") })
  end)
end)
