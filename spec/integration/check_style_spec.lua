-- check_style_spec.lua - scripts/check_style.sh's path check, on small trees
-- made for each case: a path is checked against the listed files (git's,
-- or an archive's minus what .gitignore and the build trees hold), with or
-- without a leading ./, in a runtime subsystem's short form too, and only a
-- whole placeholder component (NAME, x, y) is skipped.
local files = require("support.files")
local shell = require("support.shell")

local SOURCE = assert(os.getenv("MOONROVER_SOURCE_DIR"), "MOONROVER_SOURCE_DIR is not set")

local function q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Writes each path = text of tree under dir, making its folders.
local function make_tree(dir, tree)
  for path, text in pairs(tree) do
    shell.must("mkdir -p " .. q((dir .. "/" .. path):match("^(.*)/")))
    files.write(dir .. "/" .. path, text)
  end
end

-- A tree that passes: the script and its configuration, a formatted C
-- source and a clean Lua module.
local function base_tree(dir)
  shell.must("mkdir -p " .. q(dir .. "/scripts") .. " && cp " .. q(SOURCE .. "/scripts/check_style.sh") .. " " ..
    q(dir .. "/scripts/") .. " && cp " .. q(SOURCE .. "/.clang-format") .. " " .. q(SOURCE .. "/.luacheckrc") ..
    " " .. q(dir))
  make_tree(dir, {
    ["runtime/files/real.c"] = "/* real.c - a file that is there. */\nint mr_real(void);\n",
    -- what the copied script and configuration name
    ["runtime/files/output_file.c"] = "int mr_output(void);\n",
    ["bpf/vmlinux.h"] = "",
    ["spec/support/x.lua"] = "local _M = {}\n\nreturn _M\n",
    ["scripts/test.sh"] = "",
    ["spec/integration/check_style_spec.lua"] = "local _M = {}\n\nreturn _M\n",
    ["lua/moonrover/real.lua"] = "local _M = {}\n\nreturn _M\n",
    [".gitignore"] = "/out/\n*.o\n",
  })
end

-- Runs the check in dir (env: extra variables); its exit status and errors.
local function check(dir, env)
  local cmd = "cd " .. q(dir) .. " && " .. (env or "") .. " bash scripts/check_style.sh </dev/null 2>&1 >/dev/null"
  local f = assert(io.popen(cmd .. "; echo \"rc=$?\"", "r"))
  local out = f:read("*a")
  f:close()
  local errors, rc = out:match("^(.-)rc=(%d+)%s*$")
  return tonumber(rc), errors
end

describe("check_style.sh's path check", function()
  local dir

  before_each(function()
    dir = shell.capture("mktemp -d /tmp/moonrover-style.XXXXXX"):gsub("%s+$", "")
    base_tree(dir)
  end)

  after_each(function()
    shell.must("rm -rf " .. q(dir))
  end)

  it("passes a tree whose references all exist, placeholders and folders included", function()
    make_tree(dir, { ["docs/a.md"] = "runtime/files/real.c, ./lua/moonrover/real.lua, runtime/files/, " ..
      "spec/unit/NAME_spec.lua, bpf/x.bpf.c, runtime/NAME/y.c and files/real.c\n" })
    assert.same({ 0, "" }, { check(dir) })
  end)

  it("reports a stale path after ./, with a placeholder-like prefix, and in a subsystem's short form", function()
    make_tree(dir, {
      ["docs/a.md"] = "see ./runtime/nope.c and bpf/x_nope.h\n",
      ["runtime/files/other.c"] = "/* other.c - names files/nope.c. */\nint mr_other(void);\n",
    })
    local rc, errors = check(dir)
    assert.equal(1, rc)
    assert.matches("docs/a.md:1: runtime/nope.c does not exist", errors, 1, true)
    assert.matches("docs/a.md:1: bpf/x_nope.h does not exist", errors, 1, true)
    assert.matches("runtime/files/other.c:1: runtime/files/nope.c does not exist", errors, 1, true)
  end)

  it("counts only git's files in a checkout: an untracked leftover does not satisfy a reference", function()
    make_tree(dir, { ["docs/a.md"] = "runtime/files/left.c\n", ["runtime/files/left.c"] = "int mr_left(void);\n" })
    shell.must("cd " .. q(dir) .. " && git init -q . && git add . && git rm -q --cached runtime/files/left.c")
    local rc, errors = check(dir)
    assert.equal(1, rc)
    assert.matches("docs/a.md:1: runtime/files/left.c does not exist", errors, 1, true)
  end)

  it("leaves out, without git, what .gitignore names and the build tree of BUILD_DIR", function()
    make_tree(dir, {
      ["out/stale.md"] = "runtime/gone.c\n",
      ["mine/stale.md"] = "runtime/gone.c\n",
      ["runtime/files/leftover.o"] = "runtime/gone.c\n",
    })
    assert.same({ 0, "" }, { check(dir, "BUILD_DIR=mine") })
    local rc, errors = check(dir)
    assert.equal(1, rc)
    assert.matches("mine/stale.md:1: runtime/gone.c does not exist", errors, 1, true)
  end)
end)
