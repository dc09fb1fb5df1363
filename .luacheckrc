-- luacheck 1.1 (Debian: lua-check). Run: luacheck lua spec scripts/bench/*.lua
-- Everything runs on LuaJIT (the agent's embedded state, busted with lua = "luajit").
std = "luajit"
-- The longest line in lua/ is 120 characters; a handful in spec/ are longer and are reported.
max_line_length = 120
codes = true
-- No globals anywhere outside the standard ones: modules return tables, scripts use locals.
allow_defined = false
allow_defined_top = false

-- Specs (and their helpers under spec/support) run under busted: describe, it, assert, ...
files["spec"] = { std = "+busted" }
