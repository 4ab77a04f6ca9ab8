-- KEYS: log, last, epoch, journal, windows, limits, then the journal's sizes and jmeta.
-- ARGV: expected last id ('*': no check), base flag, epoch, limits flag, n, then kind, ident,
-- now (ms) of the request to count with the write (kind '' for none), the deadline (Unix ms
-- on Redis's clock; 0: none), the limits (a flat field/value list of n items, set when the
-- flag is '1'), then the entry's fields.
-- Returns {1, id}, {0, last id} (someone appended first: nothing counted),
-- {2, limit, window start} (over the limit: nothing appended), or {3} (run after the
-- deadline: the worker has answered 503 already, so nothing is appended).
local deadline = tonumber(ARGV[9])
if deadline > 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline then return {3} end
end
local last = redis.call('GET', KEYS[2]) or '0-0'
if ARGV[1] ~= '*' and last ~= ARGV[1] then return {0, last} end
if ARGV[6] ~= '' then
  local over = hit(KEYS[6], KEYS[5], ARGV[6], ARGV[7], tonumber(ARGV[8]))
  if over then return {2, over[1], over[2]} end
end
if not redis.call('GET', KEYS[3]) then redis.call('SET', KEYS[3], ARGV[3]) end
local n = tonumber(ARGV[5])
local fields = {}
for i = 10 + n, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
redis.call('SET', KEYS[2], id)
if ARGV[2] == '1' then
  redis.call('XTRIM', KEYS[1], 'MINID', id)
  redis.call('DEL', KEYS[4], KEYS[5], KEYS[7])
  redis.call('HDEL', KEYS[8], 'bytes', 'dropped')
end
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[5], KEYS[6])
  if n > 0 then redis.call('HSET', KEYS[6], unpack(ARGV, 10, 9 + n)) end
end
return {1, id}
