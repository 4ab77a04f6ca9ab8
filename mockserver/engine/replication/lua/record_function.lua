-- A journal entry recorded: moved from the worker's staging list (where the same write put it
-- with a plain RPUSH just before: the entry's bytes never pass through Lua), numbered, and the
-- oldest entries past either bound dropped (the newest is always kept), as Journal.record does
-- in memory. `sizes` is a list beside the journal (each entry's size); `jmeta` holds `seq`
-- (the last entry's number: numbers are consecutive, so it and the journal's length give each
-- entry's), `bytes` (kept in all) and `dropped`. `size` is the entry's size as Journal.record counts it.
local function record(journal, sizes, jmeta, stage, size, maxlen, maxbytes)
  if not redis.call('LMOVE', stage, journal, 'RIGHT', 'RIGHT') then return end
  redis.call('DEL', stage)  -- what a broken request may have left before it
  local n = redis.call('RPUSH', sizes, size)
  local meta = redis.call('HMGET', jmeta, 'seq', 'bytes', 'dropped')
  local total = tonumber(meta[2] or '0') + tonumber(size)
  maxlen, maxbytes = tonumber(maxlen), tonumber(maxbytes)
  local drop = 0
  while n - drop > 1 and (n - drop > maxlen or total > maxbytes) do
    total = total - tonumber(redis.call('LPOP', sizes) or '0')
    drop = drop + 1
  end
  if drop > 0 then redis.call('LTRIM', journal, drop, -1) end
  redis.call('HSET', jmeta, 'seq', tonumber(meta[1] or '0') + 1, 'bytes', total,
             'dropped', tonumber(meta[3] or '0') + drop)
end
