-- A hit without the catch-up check (a request counted outside the pipeline).
-- KEYS: limits, windows. ARGV: kind, ident, now (ms). Returns {0} or {1, limit, window start}.
local over = hit(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3]))
if over then return {1, over[1], over[2]} end
return {0}
