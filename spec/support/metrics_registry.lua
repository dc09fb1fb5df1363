-- metrics_registry.lua - for the metrics registry's specs: a registry of its
-- own for every case of a describe block, and its Prometheus text.
local rt = require("moonrover.rt").with_test_api()

local _M = {}

-- Called in a describe block with busted's before_each and after_each (a
-- spec's own, which a helper does not see): a new registry before every case,
-- freed after it. Returns a function that gives the current case's registry.
function _M.each_test(before_each, after_each)
  local m
  before_each(function()
    m = assert(rt.call(rt.lib.mr_metrics_new))
  end)
  after_each(function()
    rt.lib.mr_metrics_free(m)
    m = nil
  end)
  return function()
    return m
  end
end

-- The Prometheus text of registry m.
function _M.render(m)
  local len = rt.ffi.new("size_t[1]")
  local text = rt.lib.mr_metrics_render(m, len)
  assert(text ~= nil, "mr_metrics_render gave no text")
  return rt.ffi.string(text, len[0])
end

return _M
