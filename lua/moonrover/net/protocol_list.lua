-- protocol_list.lua - the application protocols the network tracer parses,
-- in the order their detectors are tried; each is a module with the
-- interface of net/protocols (detect, new_state, on_data, on_gap, on_idle,
-- on_close). A protocol's name is also its stream in the agent and its
-- `protocol` in exchanges.
local _M = {}

local MODULES = { http = "moonrover.net.protocols.http1" }
local ORDER = { "http" }

-- The names, in order.
function _M.names()
  return { unpack(ORDER) }
end

-- The modules of the names given (default: all; "HTTP" is "http"), or nil
-- and why.
function _M.modules(names)
  local chosen = {}
  for i, name in ipairs(names or ORDER) do
    local module = MODULES[tostring(name):lower()]
    if not module then
      return nil, "unknown protocol '" .. tostring(name) .. "' (known: " .. table.concat(ORDER, ", ") .. ")"
    end
    chosen[i] = require(module)
  end
  return chosen
end

return _M
