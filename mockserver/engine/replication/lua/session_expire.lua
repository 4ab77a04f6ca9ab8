-- ARGV: prefix, now ms ('': Redis's clock), idle ms. Returns the names of the sessions it
-- deleted.
local now = tonumber(ARGV[2] ~= '' and ARGV[2] or now_ms())
local gone = {}
for _, name in ipairs(redis.call('HKEYS', P .. 'sessions')) do
  local used = tonumber(redis.call('GET', P .. 'session:' .. name .. ':used') or '0')
  if now - used > tonumber(ARGV[3]) then
    drop(name)
    gone[#gone + 1] = name
  end
end
return gone
