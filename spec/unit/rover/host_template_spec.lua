-- Specs for host_template.lua: Rover's naming templates for host-mode discovery.
local host_template = require("moonrover.rover.host_template")

local ctx = {
  process = { pid = 4242, exe_path = "/usr/sbin/nginx", exe_name = "nginx",
    command_line = "nginx: master process /usr/sbin/nginx -g daemon on;", work_dir = "/" },
  container = { id = "" },
  rover = { instance_id = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", host_ip = "10.0.0.7", host_name = "web-1" },
}

local function render(text, c)
  return assert(assert(host_template.compile(text)):render(c or ctx))
end

local function compile_error(text)
  local tpl, err = host_template.compile(text)
  assert.is_nil(tpl)
  return err
end

describe("host_template.compile", function()
  it("renders each field of the host context", function()
    assert.equal("nginx", render("{{.Process.ExeName}}"))
    assert.equal("/usr/sbin/nginx", render("{{.Process.ExeFilePath}}"))
    assert.equal(ctx.process.command_line, render("{{.Process.CommandLine}}"))
    assert.equal("4242", render("{{.Process.Pid}}"))
    assert.equal("/", render("{{.Process.WorkDir}}"))
    assert.equal("nginx:", render("{{.Process.ExeNameInCommandLine}}"))
    assert.equal(ctx.rover.instance_id, render("{{.Rover.InstanceID}}"))
    assert.equal("web-1", render("{{.Rover.HostName}}"))
    assert.equal("", render("{{.Container.ID}}"))
  end)

  it("renders HostIPV4 as the host address when the finder cannot look interfaces up", function()
    assert.equal("10.0.0.7", render('{{.Rover.HostIPV4 "en0"}}'))
    assert.equal("10.0.0.7", render("{{.Rover.HostIPV4 `eth1`}}"))
  end)

  it("renders HostIPV4 as the named interface's address, else the host's", function()
    local by_name = { eth1 = "192.168.5.9" }
    local c = { process = ctx.process, container = ctx.container, rover = { host_ip = "10.0.0.7",
      ipv4 = function(name) return by_name[name] end } }
    assert.equal("192.168.5.9", render('{{.Rover.HostIPV4 "eth1"}}', c))
    assert.equal("10.0.0.7", render('{{.Rover.HostIPV4 "en0"}}', c))
  end)

  it("keeps text around several actions", function()
    assert.equal("svc-nginx@web-1:4242 (nginx)",
      render("svc-{{.Process.ExeName}}@{{.Rover.HostName}}:{{.Process.Pid}} ({{.Process.ExeName}})"))
    assert.equal("plain text", render("plain text"))
    assert.equal("", render(""))
  end)

  it("accepts spaces, Go's trim markers and functions", function()
    assert.equal("nginx", render("{{ .Process.ExeName }}"))
    assert.equal("a-nginx-b", render("a- {{- .Process.ExeName -}} \n -b"))
    assert.equal("10.0.0.7", render('{{ .Rover.HostIPV4   "en0" }}'))
    assert.equal("web", render('{{equalsOrDefault "nginx" "web" .Process.ExeName}}'))
  end)

  it("renders an unknown value as empty", function()
    assert.equal("[]", render("[{{.Process.WorkDir}}]", { process = { pid = 1 }, rover = {}, container = {} }))
  end)

  it("fails to render HostIPV4 on a host without an address, as Rover", function()
    local tpl = assert(host_template.compile('{{.Rover.HostIPV4 "en0"}}', "instance_name"))
    local s, err = tpl:render({ process = { pid = 1 }, rover = { host_ip = "" }, container = {} })
    assert.is_nil(s)
    assert.equal("instance_name:1:3: error calling HostIPV4: could not found the ip v4 address from en0", err)
  end)

  it("names an unknown field, a wrong argument count and a broken action", function()
    assert.equal("1:5: unknown field .Process.Exename", compile_error("x-{{.Process.Exename}}"))
    assert.equal("1:3: unknown field .Pod", compile_error("{{.Pod.Name}}"))
    assert.equal('1:3: .Process.ExeName takes 0 arguments, not 1', compile_error('{{.Process.ExeName "x"}}'))
    assert.equal("1:3: .Rover.HostIPV4 takes 1 argument, not 0", compile_error("{{.Rover.HostIPV4}}"))
    assert.equal("1:1: unclosed action", compile_error("{{.Process.ExeName"))
    assert.equal("not a string", compile_error(nil))
  end)
end)
