-- Specs for template.lua: Rover's naming templates for host-mode discovery.
local template = require("moonrover.rover.template")

local ctx = {
  process = { pid = 4242, exe_path = "/usr/sbin/nginx", exe_name = "nginx",
    command_line = "nginx: master process /usr/sbin/nginx -g daemon on;", work_dir = "/" },
  container = { id = "" },
  rover = { instance_id = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", host_ip = "10.0.0.7", host_name = "web-1" },
}

local function render(text)
  return assert(template.compile(text))(ctx)
end

describe("template.compile", function()
  it("renders each placeholder of the host context", function()
    assert.equal("nginx", render("{{.Process.ExeName}}"))
    assert.equal("/usr/sbin/nginx", render("{{.Process.ExeFilePath}}"))
    assert.equal(ctx.process.command_line, render("{{.Process.CommandLine}}"))
    assert.equal("4242", render("{{.Process.Pid}}"))
    assert.equal("/", render("{{.Process.WorkDir}}"))
    assert.equal(ctx.rover.instance_id, render("{{.Rover.InstanceID}}"))
    assert.equal("web-1", render("{{.Rover.HostName}}"))
    assert.equal("", render("{{.Container.ID}}"))
  end)

  it("renders HostIPV4 as the host address whatever the interface", function()
    assert.equal("10.0.0.7", render('{{.Rover.HostIPV4 "en0"}}'))
    assert.equal("10.0.0.7", render("{{.Rover.HostIPV4 `eth1`}}"))
  end)

  it("keeps text around several placeholders", function()
    assert.equal("svc-nginx@web-1:4242 (nginx)",
      render("svc-{{.Process.ExeName}}@{{.Rover.HostName}}:{{.Process.Pid}} ({{.Process.ExeName}})"))
    assert.equal("plain text", render("plain text"))
    assert.equal("", render(""))
  end)

  it("accepts spaces and Go's trim markers", function()
    assert.equal("nginx", render("{{ .Process.ExeName }}"))
    assert.equal("a-nginx-b", render("a- {{- .Process.ExeName -}} \n -b"))
    assert.equal("10.0.0.7", render('{{ .Rover.HostIPV4   "en0" }}'))
  end)

  it("renders an unknown value as empty", function()
    local fn = assert(template.compile("[{{.Process.WorkDir}}]"))
    assert.equal("[]", fn({ process = { work_dir = nil } }))
  end)

  it("names an unknown placeholder", function()
    local fn, err = template.compile("x-{{.Process.Exename}}")
    assert.is_nil(fn)
    assert.matches("unknown placeholder {{.Process.Exename}}", err, 1, true)
    fn, err = template.compile("{{.Pod.Name}}")
    assert.is_nil(fn)
    assert.matches("{{.Pod.Name}}", err, 1, true)
    fn, err = template.compile("{{.Process.ExeName \"x\"}}")
    assert.is_nil(fn)
    assert.matches("unknown placeholder", err, 1, true)
  end)

  it("rejects HostIPV4 without its interface name, and unclosed actions", function()
    local fn, err = template.compile("{{.Rover.HostIPV4}}")
    assert.is_nil(fn)
    assert.matches("HostIPV4 needs one quoted interface name", err, 1, true)
    fn, err = template.compile("{{.Process.ExeName")
    assert.is_nil(fn)
    assert.matches("unclosed {{ at position 1", err, 1, true)
    fn, err = template.compile(nil)
    assert.is_nil(fn)
    assert.equal("not a string", err)
  end)
end)
