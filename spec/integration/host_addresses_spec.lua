-- host_addresses_spec.lua - this host's addresses as process discovery
-- reads them through the runtime (finder_facts.lua): the host's first
-- address that is not loopback, and each interface's own, for Rover's
-- {{.Rover.HostIPV4 "eth0"}}; compared with what `ip` lists.
local facts = require("moonrover.rover.finder_facts")
local shell = require("support.shell")

-- interface name -> its first IPv4 address, in the order `ip` lists them.
local function listed()
  local first, order = {}, {}
  for name, address in shell.capture("ip -4 -o addr show"):gmatch("%d+: (%S+)%s+inet ([%d%.]+)/") do
    if not first[name] then
      first[name] = address
      order[#order + 1] = name
    end
  end
  return first, order
end

describe("this host's IPv4 addresses", function()
  it("gives each interface's first address, loopback included", function()
    local first, order = listed()
    assert.is_true(#order > 0, "ip lists no IPv4 address")
    for _, name in ipairs(order) do
      assert.equal(first[name], facts.host_ipv4(name), name)
    end
    assert.equal("127.0.0.1", facts.host_ipv4("lo"))
  end)

  it("gives nothing for an interface the host does not have", function()
    assert.is_nil(facts.host_ipv4("moonrover-none0"))
  end)

  it("gives the first address that is not loopback as the host's", function()
    local first, order = listed()
    local want = ""
    for _, name in ipairs(order) do
      if not first[name]:find("^127%.") then
        want = first[name]
        break
      end
    end
    assert.equal(want, facts.host_ip())
  end)
end)
