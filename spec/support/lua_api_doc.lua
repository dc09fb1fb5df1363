-- lua_api_doc.lua - the Lua examples of docs/lua-api.md, for the specs that
-- run them as they are written.
local files = require("support.files")

local _M = {}

local PATH = (os.getenv("MOONROVER_SOURCE_DIR") or ".") .. "/docs/lua-api.md"

-- The ```lua blocks of the section whose heading line starts with heading
-- (up to the next "## " heading), in order.
function _M.examples(heading)
  local doc = assert(files.read(PATH), "cannot read " .. PATH)
  local from = assert(doc:find("\n" .. heading, 1, true), "no section '" .. heading .. "' in " .. PATH)
  local to = doc:find("\n## ", from + 1, true) or #doc
  local out = {}
  for block in doc:sub(from, to):gmatch("```lua\n(.-)```") do
    out[#out + 1] = block
  end
  return out
end

return _M
