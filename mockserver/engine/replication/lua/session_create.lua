-- ARGV: prefix, name, entry, incarnation, (unused), max sessions, max change bytes, record
-- bytes, snapshot name ('' none), its stored id, then the rate limits (field/value pairs).
local name = ARGV[2]
if redis.call('HEXISTS', P .. 'sessions', name) == 1 then return {'exists'} end
local base = false
if ARGV[9] ~= '' then
  local meta = redis.call('HGET', P .. 'snapshots', ARGV[9])
  if not meta then return {'nosnap'} end
  base = cjson.decode(meta)['id']
  if base ~= ARGV[10] then return {'retry'} end
end
if redis.call('HLEN', P .. 'sessions') >= tonumber(ARGV[6]) then return {'cap'} end
local h = held(0, tonumber(ARGV[8]))
if h >= tonumber(ARGV[7]) then return {'memory', tostring(h)} end
local sp = P .. 'session:' .. name .. ':'
for _, s in ipairs(SUFFIXES) do redis.call('DEL', sp .. s) end
redis.call('SET', sp .. 'epoch', ARGV[4])
if #ARGV > 10 then redis.call('HSET', sp .. 'limits', unpack(ARGV, 11)) end
redis.call('HSET', P .. 'sessions', name, ARGV[3])
redis.call('SET', sp .. 'used', now_ms())
redis.call('HSET', P .. 'changes', name, 0)
if base then redis.call('HINCRBY', P .. 'snaprefs', base, 1) end
return {'ok'}
