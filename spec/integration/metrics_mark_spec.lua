-- metrics_mark_spec.lua - rolling the metrics registry back to a mark
-- (runtime/metrics/metrics_mark.c): what was registered since goes from the
-- text and the indexes, what was there before stays as it was, and the same
-- names can be registered again.
local rt = require("moonrover.rt").with_test_api()
local metrics_registry = require("support.metrics_registry")
local ffi, lib = rt.ffi, rt.lib

local COUNTER = lib.MR_COUNTER

describe("metrics registry rollback", function()
  local registry = metrics_registry.each_test(before_each, after_each)

  local function series(name, labels)
    return assert(rt.call(lib.mr_metrics_series, registry(), COUNTER, name, "help of " .. name, labels))
  end

  local function histogram(name, labels, bounds)
    local b = ffi.new("double[?]", #bounds, bounds)
    return rt.call(lib.mr_metrics_histogram, registry(), name, "", labels, b, #bounds)
  end

  local function render()
    return metrics_registry.render(registry())
  end

  it("forgets the metrics and series registered after the mark, and only those", function()
    lib.mr_metrics_add(registry(), series("kept_total", 'script="old"'), 3)
    assert(histogram("kept_seconds", "", { 0.1, 1 }))
    local before = render()
    local mark = lib.mr_metrics_mark(registry())
    lib.mr_metrics_add(registry(), series("kept_total", 'script="new"'), 1)
    series("new_total", "")
    assert(histogram("kept_seconds", 'script="new"', { 0.1, 1 }))
    assert(histogram("new_seconds", "", { 0.5 }))
    assert.matches("new_total", render())
    lib.mr_metrics_rollback(registry(), mark)
    assert.equal(before, render())
  end)

  it("registers the same names again after a rollback, with their help and their own bounds", function()
    local old = series("kept_total", 'script="old"')
    local mark = lib.mr_metrics_mark(registry())
    assert(histogram("trial_seconds", "", { 1, 2 }))
    series("kept_total", 'script="trial"')
    lib.mr_metrics_rollback(registry(), mark)
    -- other bounds than the trial's: the trial's metric is gone, bounds and all
    assert(histogram("trial_seconds", "", { 5 }))
    lib.mr_metrics_add(registry(), series("kept_total", 'script="trial"'), 2)
    assert.equal(old, series("kept_total", 'script="old"'))
    local text = render()
    assert.matches('\ntrial_seconds_bucket{le="5"} 0\ntrial_seconds_bucket{le="%+Inf"} 0\n', text)
    assert.matches('\nkept_total{script="old"} 0\nkept_total{script="trial"} 2\n', text)
  end)

  it("changes nothing when nothing came after the mark", function()
    series("a_total", "")
    local before, mark = render(), lib.mr_metrics_mark(registry())
    lib.mr_metrics_rollback(registry(), mark)
    assert.equal(before, render())
  end)
end)
