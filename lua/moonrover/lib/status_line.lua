-- status_line.lua - one line of live progress on a terminal, rewritten in
-- place ("\r", then erase to the end of the line). It shows nothing when its
-- output is not a terminal, so logs and pipes never get progress noise.
-- warn() prints a line of its own above the status line and shows the status
-- again; around(fn) erases it while fn writes elsewhere on the same terminal
-- (a command's output on standard output) and shows it again after. The
-- caller decides how often to call update(); the line keeps the terminal's
-- width at most 79 columns so that it never wraps.
local _M = {}

local Line = {}
Line.__index = Line

local WIDTH = 79
local ERASE = "\r\27[K"

-- opts: { tty = boolean, write = function(text) } (write defaults to stderr).
function _M.new(opts)
  local write = opts.write or function(text)
    io.stderr:write(text)
    io.stderr:flush()
  end
  return setmetatable({ tty = opts.tty and true or false, write = write, shown = nil }, Line)
end

-- Replaces the status line with `text` (cut to the width).
function Line:update(text)
  if not self.tty then
    return
  end
  self.shown = text:sub(1, WIDTH)
  self.write(ERASE .. self.shown)
end

-- Prints `text` on a line of its own, whether or not this is a terminal
-- (warnings are never progress noise), and shows the status line again below it.
function Line:warn(text)
  if self.tty and self.shown then
    self.write(ERASE .. text .. "\n" .. self.shown)
  else
    self.write(text .. "\n")
  end
end

-- Calls fn() with the status line erased, then shows it again: what fn
-- writes to the terminal starts at the beginning of a clean line.
function Line:around(fn)
  local shown = self.tty and self.shown
  if shown then
    self.write(ERASE)
  end
  fn()
  if shown then
    self.write(ERASE .. shown)
  end
end

-- Erases the status line, leaving the cursor at the start of an empty line.
function Line:clear()
  if self.tty and self.shown then
    self.write(ERASE)
  end
  self.shown = nil
end

return _M
