-- files.lua - whole-file reads and writes for specs.
local _M = {}

-- The file's contents, or nil when it cannot be read.
function _M.read(path)
  local fh = io.open(path, "rb")
  if not fh then
    return nil
  end
  local text = fh:read("*a")
  fh:close()
  return text
end

-- Writes text to path (replacing it); raises when it cannot.
function _M.write(path, text)
  local fh = assert(io.open(path, "wb"))
  assert(fh:write(text))
  assert(fh:close())
end

return _M
