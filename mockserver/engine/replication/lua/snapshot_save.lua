-- ARGV: prefix, name, description, stored id, serialized snapshot, replace ('1'), max change
-- bytes, record bytes, the snapshot's changes.
local old = redis.call('HGET', P .. 'snapshots', ARGV[2])
if old and ARGV[6] ~= '1' then return {'exists'} end
local h = held(tonumber(ARGV[9]), tonumber(ARGV[8]))
if h >= tonumber(ARGV[7]) then return {'memory', tostring(h)} end
redis.call('SET', P .. 'snapshot:' .. ARGV[4], ARGV[5])
redis.call('HINCRBY', P .. 'snaprefs', ARGV[4], 1)
redis.call('HSET', P .. 'snapshots', ARGV[2], ARGV[3])
redis.call('HSET', P .. 'changes', 'snap:' .. ARGV[2], ARGV[9])
if old then unref(cjson.decode(old)['id']) end
return {'ok'}
