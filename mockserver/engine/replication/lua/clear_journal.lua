-- KEYS: journal, sizes, jmeta (numbering goes on, as in memory). Returns how many entries
-- were dropped.
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HDEL', KEYS[3], 'bytes', 'dropped')
return n
