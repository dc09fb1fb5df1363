-- base64.lua - decodes base64 text (RFC 4648, the standard alphabet, "="
-- padding optional, whitespace and line breaks ignored), as kubeconfig files
-- carry certificates and keys (certificate-authority-data and the like).
local _M = {}

local VALUE = {}
do
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  for i = 1, #alphabet do
    VALUE[alphabet:byte(i)] = i - 1
  end
end

local char, floor = string.char, math.floor

-- The bytes text encodes, or nil and why.
function _M.decode(text)
  local clean = text:gsub("%s+", ""):gsub("=+$", "")
  if #clean % 4 == 1 then
    return nil, "base64 text of a length no encoding has"
  end
  local out = {}
  for i = 1, #clean, 4 do
    local n, count = 0, 0
    for j = i, math.min(i + 3, #clean) do
      local v = VALUE[clean:byte(j)]
      if not v then
        return nil, string.format("not base64: %q", clean:sub(j, j))
      end
      n, count = n * 64 + v, count + 1
    end
    for _ = count + 1, 4 do
      n = n * 64
    end
    local a, b, c = floor(n / 65536), floor(n / 256) % 256, n % 256
    out[#out + 1] = count == 4 and char(a, b, c) or count == 3 and char(a, b) or char(a)
  end
  return table.concat(out)
end

return _M
