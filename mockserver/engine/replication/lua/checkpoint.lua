-- KEYS: log, last, epoch. ARGV: expected last id, epoch, then the entry's fields.
-- Appends the checkpoint and trims the log before it when the log still ends at the expected
-- id in the same incarnation; returns {1, id} or {0, last id}.
local last = redis.call('GET', KEYS[2]) or '0-0'
if last ~= ARGV[1] or redis.call('GET', KEYS[3]) ~= ARGV[2] then return {0, last} end
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('SET', KEYS[2], id)
redis.call('XTRIM', KEYS[1], 'MINID', id)
return {1, id}
