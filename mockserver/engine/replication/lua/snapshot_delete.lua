-- ARGV: prefix, name. Returns 1 when deleted, 0 when there was no such snapshot.
local old = redis.call('HGET', P .. 'snapshots', ARGV[2])
if not old then return 0 end
redis.call('HDEL', P .. 'snapshots', ARGV[2])
redis.call('HDEL', P .. 'changes', 'snap:' .. ARGV[2])
unref(cjson.decode(old)['id'])
return 1
