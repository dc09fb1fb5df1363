-- trace_filter.lua - which exchanges `moonrover trace` prints: the filters
-- of its command line (--port, --status, --min-duration, --path), each
-- turned from text into a test, and one predicate that lets an exchange
-- through only when every filter given matches it. (--comm chooses the
-- processes traced, net/trace_targets.lua: it is no filter of exchanges,
-- whose comm is the thread's at accept or connect.) Pure.
local _M = {}

local MAX_PORT = 65535

-- A port number from text, or nil and why (an args converter).
function _M.port(text)
  local n = tonumber(text)
  if not n or n ~= math.floor(n) or n < 1 or n > MAX_PORT then
    return nil, "'" .. text .. "' is not a port (1 to " .. MAX_PORT .. ")"
  end
  return n
end

local COMPARE = {
  [">="] = function(a, b) return a >= b end,
  [">"] = function(a, b) return a > b end,
  ["<="] = function(a, b) return a <= b end,
  ["<"] = function(a, b) return a < b end,
  ["="] = function(a, b) return a == b end,
}

-- One item of a status list: "5xx", ">=400", "<300", "404".
local function status_test(item)
  local class = item:lower():match("^([1-5])xx$")
  if class then
    local lo = tonumber(class) * 100
    return function(s) return s >= lo and s < lo + 100 end
  end
  local op, number = item:match("^([<>]?=?)(%d%d%d)$")
  local code = tonumber(number)
  if not code or code < 100 or code > 599 then
    return nil
  end
  local compare = COMPARE[op == "" and "=" or op]
  return compare and function(s) return compare(s, code) end
end

-- A status filter from text ("5xx", ">=400", "404", "2xx,5xx": any item
-- may match): a function(status) -> boolean, or nil and why.
function _M.status(text)
  local tests = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local test = status_test(item)
    if not test then
      return nil, "'" .. item .. "' is not a status (e.g. 404, 5xx, >=400, <300; several separated by ',')"
    end
    tests[#tests + 1] = test
  end
  return function(status)
    for _, test in ipairs(tests) do
      if test(status) then
        return true
      end
    end
    return false
  end
end

local function tests_of(opts)
  local tests = {}
  if opts.port then
    local port = opts.port
    tests[#tests + 1] = function(ex) return ex.local_port == port or ex.remote_port == port end
  end
  if opts.status then
    tests[#tests + 1] = function(ex) return (ex.status or 0) > 0 and opts.status(ex.status) end
  end
  if opts.min_duration_ns then
    tests[#tests + 1] = function(ex) return ex.duration_ns and ex.duration_ns >= opts.min_duration_ns end
  end
  if opts.path then
    tests[#tests + 1] = function(ex) return ex.target and ex.target:sub(1, #opts.path) == opts.path end
  end
  return tests
end

-- opts: port (number, matched against the exchange's local_port and
-- remote_port, which the tracer keeps per connection), status (from _M.status),
-- min_duration_ns, path (a prefix of the target), any of them absent.
-- Returns function(ex) -> whether every filter given lets ex through.
function _M.new(opts)
  local tests = tests_of(opts)
  return function(ex)
    for i = 1, #tests do
      if not tests[i](ex) then
        return false
      end
    end
    return true
  end
end

return _M
