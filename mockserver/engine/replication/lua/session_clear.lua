-- ARGV: prefix. Deletes every session and snapshot; returns how many sessions there were.
local names = redis.call('HKEYS', P .. 'sessions')
for _, name in ipairs(names) do drop(name) end
local snaps = redis.call('HGETALL', P .. 'snapshots')
for i = 1, #snaps, 2 do
  unref(cjson.decode(snaps[i + 1])['id'])
  redis.call('HDEL', P .. 'changes', 'snap:' .. snaps[i])
end
redis.call('DEL', P .. 'snapshots')
return #names
