-- Before log.py's `_SYNC` (KEYS[10]: the session's `used`), for a session: {0} when it is
-- not registered (its epoch goes with its registry entry); else its use noted (Redis's clock).
if not redis.call('GET', KEYS[3]) then
  if ARGV[8] then redis.call('DEL', KEYS[9]) end  -- the read's staged journal entry
  return {0}
end
local t = redis.call('TIME')
redis.call('SET', KEYS[10], t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000)))
