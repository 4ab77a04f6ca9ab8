-- KEYS: meta. ARGV: field/value pairs. Sets them when the namespace is new; returns the
-- namespace's values.
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1])
