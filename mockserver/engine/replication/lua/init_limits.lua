-- KEYS: limits. ARGV: field/value pairs. The namespace's rate limits, set when it is new.
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return 1
