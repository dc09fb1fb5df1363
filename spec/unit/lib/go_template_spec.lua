-- Specs for go_template.lua: the Go text/template subset of Rover's process naming.
local go_template = require("moonrover.lib.go_template")

local CONTAINER = { Name = 0, EnvValue = 1, Env = { args = { 0, 1 } } }
local FIELDS = {
  Pod = { args = 0, fields = { Name = 0, Namespace = 0, LabelValue = 2, HasContainer = 1,
    FindContainer = { args = 1, fields = CONTAINER } } },
  Process = { args = 0, fields = { Pid = 0, ExeName = 0 } },
  Container = { args = 0, fields = CONTAINER },
}

local function container(name, env)
  return {
    Name = function() return name end,
    EnvValue = function(_, key)
      if env[key] then
        return env[key]
      end
      return nil, "no variable " .. key
    end,
  }
end

local labels = { app = "cart", tier = "" }
local data = {
  Pod = {
    Name = function() return "cart-7d9-x2" end,
    Namespace = function() return "shop" end,
    LabelValue = function(_, names, default)
      for name in names:gmatch("[^,]+") do
        if (labels[name] or "") ~= "" then
          return labels[name]
        end
      end
      return default
    end,
    HasContainer = function(_, name) return name == "istio-proxy" end,
    FindContainer = function(_, name)
      if name == "istio-proxy" then
        return container("istio-proxy", { ISTIO_META = "1" })
      end
      return nil, "could not found the container"
    end,
  },
  Process = { Pid = function() return 4242 end, ExeName = function() return "envoy" end },
  Container = container("app", { PORT = "8080" }),
}
data.Container.Env = function(_, key) return key or "all" end

local function render(text)
  local tpl = assert(go_template.compile(text, { name = "t", fields = FIELDS }))
  return assert(tpl:render(data))
end

local function compile_error(text, opts)
  local tpl, err = go_template.compile(text, opts or { name = "t", fields = FIELDS })
  assert.is_nil(tpl)
  return err
end

local function render_error(text)
  local tpl = assert(go_template.compile(text, { name = "t", fields = FIELDS }))
  local s, err = tpl:render(data)
  assert.is_nil(s)
  return err
end

describe("go_template text and actions", function()
  it("keeps text and writes each action's value", function()
    assert.equal("plain", render("plain"))
    assert.equal("", render(""))
    assert.equal("cart-7d9-x2.shop", render("{{.Pod.Name}}.{{.Pod.Namespace}}"))
    assert.equal("pid 4242", render("pid {{ .Process.Pid }}"))
  end)

  it("trims the space the markers point at, and only with a space after them", function()
    assert.equal("a-envoy-b", render("a- \n {{- .Process.ExeName -}} \t-b"))
    assert.equal("a -3", render("a {{-3}}"))
    assert.equal("x 1 y", render("x {{1}} y"))
  end)

  it("writes strings, numbers and booleans as Go prints them", function()
    assert.equal('q"\\\n\tA\195\169', render([[{{"q\"\\\n\t\x41\u00e9"}}]]))
    assert.equal("raw \\n", render("{{`raw \\n`}}"))
    assert.equal("12 -7 1.5 255 1000", render("{{12}} {{-7}} {{1.5}} {{0xff}} {{1_000}}"))
    assert.equal("true false", render("{{true}} {{false}}"))
    assert.equal("a}}b", render('{{"a}}b"}}'))
  end)
end)

describe("go_template fields and methods", function()
  it("calls methods with arguments, the last one of a chain", function()
    assert.equal("cart", render('{{.Pod.LabelValue "service.istio.io/canonical-name,app" ""}}'))
    assert.equal("none", render('{{.Pod.LabelValue "tier" "none"}}'))
    assert.equal("8080", render('{{.Container.EnvValue "PORT"}}'))
  end)

  it("chains fields on a parenthesised call", function()
    assert.equal("istio-proxy", render('{{(.Pod.FindContainer "istio-proxy").Name}}'))
    assert.equal("1", render('{{(.Pod.FindContainer "istio-proxy").EnvValue "ISTIO_META"}}'))
  end)

  it("passes a command's value as the last argument of the next", function()
    assert.equal("true", render('{{.Process.ExeName | eq "envoy"}}'))
    assert.equal("cart", render('{{"" | .Pod.LabelValue "app"}}'))
    assert.equal("false", render('{{.Pod.Name | eq "x" | not | not}}'))
  end)

  it("runs without fields to check against", function()
    local tpl = assert(go_template.compile("{{.A.B}}-{{.C}}"))
    assert.equal("b-3", tpl:render({ A = { B = "b" }, C = 3 }))
  end)
end)

describe("go_template functions", function()
  it("compares with eq (any of the others) and ne", function()
    assert.equal("true", render('{{eq .Container.Name "istio-proxy" "app"}}'))
    assert.equal("false", render('{{eq .Container.Name "istio-proxy"}}'))
    assert.equal("true", render('{{ne .Container.Name "istio-proxy"}}'))
    assert.equal("true", render("{{eq .Process.Pid 4242}}"))
  end)

  it("gives and/or the first deciding value and stops there", function()
    assert.equal("0", render("{{and 1 0 2}}"))
    assert.equal("2", render("{{and 1 2}}"))
    assert.equal("x", render('{{or "" 0 "x"}}'))
    assert.equal("", render('{{or "" ""}}'))
    -- The failing call is never made.
    assert.equal("false", render('{{and false (.Pod.FindContainer "none")}}'))
    assert.equal("true", render('{{or true (.Pod.FindContainer "none")}}'))
    assert.equal("true false", render('{{not ""}} {{not "a"}}'))
  end)

  it("has Rover's equalsOrDefault: the default when the value is the one given", function()
    assert.equal("unknown", render('{{equalsOrDefault "" "unknown" (.Pod.LabelValue "tier" "")}}'))
    assert.equal("cart", render('{{equalsOrDefault "" "unknown" (.Pod.LabelValue "app" "")}}'))
  end)
end)

describe("go_template if", function()
  it("takes the branch its pipe's truth picks", function()
    assert.equal("mesh", render('{{if .Pod.HasContainer "istio-proxy"}}mesh{{else}}plain{{end}}'))
    assert.equal("plain", render('{{if .Pod.HasContainer "x"}}mesh{{else}}plain{{end}}'))
    assert.equal("", render('{{if ""}}x{{end}}'))
    assert.equal("b", render("{{if 0}}a{{else if 1}}b{{else}}c{{end}}"))
    assert.equal("c", render("{{if 0}}a{{else if 0}}b{{else}}c{{end}}"))
    assert.equal("in", render("{{if 1}}{{if 1}}in{{end}}{{end}}"))
    assert.equal("x", render("{{- if 1 -}} x {{- end -}}"))
  end)
end)

describe("go_template filters", function()
  it("wraps the expression in braces and reads the result as Go's ParseBool", function()
    local f = assert(go_template.filter('eq .Container.Name "app"', { name = "filter", fields = FIELDS }))
    assert.is_true(f:test(data))
    f = assert(go_template.filter('.Pod.HasContainer "sidecar"', { fields = FIELDS }))
    assert.is_false(f:test(data))
    f = assert(go_template.filter("1"))
    assert.is_true(f:test(data))
    f = assert(go_template.filter('"F"'))
    assert.is_false(f:test(data))
  end)

  it("fails on what is not a boolean", function()
    local f = assert(go_template.filter(".Pod.Name", { name = "filter", fields = FIELDS }))
    local yes, err = f:test(data)
    assert.is_nil(yes)
    assert.equal('filter: "cart-7d9-x2" is not a boolean', err)
  end)
end)

describe("go_template compile errors", function()
  it("names an unknown field or function and where it is", function()
    assert.equal("t:1:6: unknown field .Pod.Nam", compile_error("ab {{.Pod.Nam}}"))
    assert.equal("t:2:3: .Pod.Name.X: .Pod.Name has no fields", compile_error("\n{{.Pod.Name.X}}"))
    assert.equal('t:1:3: function "len" not defined', compile_error("{{len .Pod.Name}}"))
    assert.equal("t:1:4: unknown field .Nope", compile_error('{{(.Nope "x").Name}}'))
    assert.equal("t:1:3: unknown field (...).Nam", compile_error('{{(.Pod.FindContainer "x").Nam}}'))
  end)

  it("counts the arguments of methods and functions, a piped value included", function()
    assert.equal("t:1:3: .Pod.LabelValue takes 2 arguments, not 1", compile_error('{{.Pod.LabelValue "a"}}'))
    assert.equal("t:1:3: .Pod.Name takes 0 arguments, not 1", compile_error('{{.Pod.Name "a"}}'))
    assert.equal("t:1:15: .Pod takes 0 arguments, not 1", compile_error('{{.Pod.Name | .Pod}}'))
    assert.equal("t:1:3: ne takes 2 arguments, not 3", compile_error("{{ne 1 2 3}}"))
    assert.equal("t:1:3: eq takes at least 2 arguments, not 1", compile_error("{{eq 1}}"))
    assert.equal("t:1:8: not takes 1 argument, not 0", compile_error("{{and (not)}}"))
    assert.is_truthy(go_template.compile('{{"a" | eq "a"}}'))
    assert.equal("all PORT", render('{{.Container.Env}} {{.Container.Env "PORT"}}'))
    assert.equal("t:1:3: .Container.Env takes 0 to 1 arguments, not 2", compile_error('{{.Container.Env "a" "b"}}'))
  end)

  it("refuses arguments to what is not a function", function()
    assert.equal("t:1:3: string is not a function and takes no arguments", compile_error('{{"a" "b"}}'))
    assert.equal("t:1:9: number is not a function and takes no arguments", compile_error('{{"a" | 1}}'))
  end)

  it("names each construct outside the subset", function()
    assert.equal('t:1:3: "range" is not supported', compile_error("{{range .Pod}}{{end}}"))
    assert.equal('t:1:3: "with" is not supported', compile_error("{{with .Pod}}{{end}}"))
    assert.equal('t:1:3: "define" is not supported', compile_error('{{define "x"}}{{end}}'))
    assert.equal('t:1:3: "template" is not supported', compile_error('{{template "x"}}'))
    assert.equal('t:1:3: "nil" is not supported', compile_error("{{nil}}"))
    assert.equal("t:1:3: variables ($x) are not supported", compile_error("{{$x := 1}}"))
    assert.equal("t:1:3: comments are not supported", compile_error("{{/* c */}}"))
    assert.equal("t:1:3: character constants are not supported", compile_error("{{'a'}}"))
    assert.equal('t:1:5: unexpected "," in action', compile_error("{{1 , 2}}"))
  end)

  it("names broken syntax", function()
    assert.equal("t:1:3: unclosed action", compile_error("a {{.Pod.Name"))
    assert.equal("t:1:3: unterminated quoted string", compile_error('{{"abc}}'))
    assert.equal("t:1:3: unterminated raw quoted string", compile_error("{{`abc}}"))
    assert.equal("t:1:4: unknown escape sequence in string", compile_error('{{"\\q"}}'))
    assert.equal('t:1:3: bad number syntax: "1x2"', compile_error("{{1x2}}"))
    assert.equal('t:1:3: bad field name ".Pod.9"', compile_error("{{.Pod.9}}"))
    assert.equal("t:1:1: missing value for command", compile_error("{{ }}"))
    assert.equal("t:1:8: missing value for command", compile_error("{{.Pod |}}"))
    assert.equal("t:1:3: unclosed left paren", compile_error("{{(.Pod.Name}}"))
    assert.equal('t:1:12: unexpected ")" in action', compile_error("{{.Pod.Name)}}"))
    assert.equal("t:1:10: unexpected field .Name after string", compile_error('{{"x" "a".Name}}'))
  end)

  it("names a misplaced or missing if, else and end", function()
    assert.equal("t:1:1: unexpected {{end}}", compile_error("{{end}}"))
    assert.equal("t:1:1: unexpected {{else}}", compile_error("{{else}}"))
    assert.equal("t:1:18: unexpected {{else}} after {{else}}", compile_error("{{if 1}}{{else}}a{{else}}{{end}}"))
    assert.equal("t:1:13: unexpected end of template: {{if}} at 1:1 has no {{end}}", compile_error("{{if true}}a"))
    assert.equal('t:1:15: unexpected "number" in end', compile_error("{{if 1}}{{end 1}}"))
    assert.equal('t:1:6: unexpected "if" in command', compile_error("{{eq if 1}}"))
  end)

  it("needs a string, and names it without a name", function()
    assert.equal("t: not a string", compile_error(nil))
    assert.equal("not a string", compile_error(nil, {}))
    assert.equal("1:3: unknown field .X", compile_error("{{.X}}", { fields = {} }))
  end)
end)

describe("go_template render errors", function()
  it("names the template, the place and the method that failed", function()
    assert.equal("t:1:4: error calling FindContainer: could not found the container",
      render_error('{{(.Pod.FindContainer "db").Name}}'))
    assert.equal("t:1:3: error calling EnvValue: no variable HOME", render_error('{{.Container.EnvValue "HOME"}}'))
  end)

  it("names a field of nothing, an invalid comparison and an object printed", function()
    local tpl = assert(go_template.compile("{{.A.B}}", { name = "t" }))
    local s, err = tpl:render({})
    assert.is_nil(s)
    assert.equal("t:1:3: can't evaluate field A", err)
    s, err = tpl:render({ A = "text" })
    assert.is_nil(s)
    assert.equal("t:1:3: can't evaluate field B in type string", err)
    s, err = assert(go_template.compile("{{.A.B}}")):render({ A = { B = false } })
    assert.equal("false", s)
    assert.is_nil(err)
    assert.equal("t:1:3: incompatible types for comparison", render_error('{{eq .Process.Pid "4242"}}'))
    assert.equal("t:1:1: cannot print an object", render_error("{{.Pod}}"))
    assert.equal("t:1:3: equalsOrDefault takes strings, not a number", render_error('{{equalsOrDefault "a" "b" 1}}'))
  end)
end)
