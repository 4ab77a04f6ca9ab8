-- The one round trip of a request (and the catch-up). KEYS: log, last, epoch, limits,
-- windows, journal, jsizes, jmeta, the worker's journal staging list. ARGV: applied id ('*':
-- the place is known to have been current during the request, only the epoch is checked), known
-- epoch, batch, a new epoch (used when none), then optionally kind, ident, now (ms) of a
-- request to count (kind '' for none), and when the same write staged the request's journal
-- entry, its size, max entries, max bytes (_RECORD's ARGV). Returns {epoch, last id, entries}
-- when the log has entries the worker has not applied (nothing counted or recorded; with a
-- fourth item, 1, when the worker's place is not in the log and it must rebuild from the
-- log's start: `_behind`), {epoch, last id, limit, window start} when over the limit (nothing
-- recorded: the answer becomes a 429, recorded apart), else {epoch, last id} (counted,
-- recorded).
local got = redis.call('MGET', KEYS[3], KEYS[2])
local epoch, last = got[1], got[2] or '0-0'
if not epoch then redis.call('SET', KEYS[3], ARGV[4]); epoch = ARGV[4] end
if epoch ~= ARGV[2] or (ARGV[1] ~= '*' and last ~= ARGV[1]) then
  if ARGV[8] then redis.call('DEL', KEYS[9]) end
  local start, rebuild = '(' .. ARGV[1], false
  if epoch ~= ARGV[2] then
    start = '-'
  elseif ARGV[1] ~= '0-0' then
    -- The worker's last entry is gone while older ones are there, or the log is empty: the
    -- log went backwards (Redis restored an older snapshot). Trimmed by a later base, it
    -- would be older than every entry left, and the log go on from that base.
    local at = redis.call('XREVRANGE', KEYS[1], ARGV[1], '-', 'COUNT', 1)
    if (at[1] and at[1][1] ~= ARGV[1]) or (not at[1] and redis.call('XLEN', KEYS[1]) == 0) then
      start, rebuild = '-', true
    end
  end
  local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[3])
  if rebuild then return {epoch, last, entries, 1} end
  return {epoch, last, entries}
end
if ARGV[5] and ARGV[5] ~= '' then
  local over = hit(KEYS[4], KEYS[5], ARGV[5], ARGV[6], tonumber(ARGV[7]))
  if over then
    if ARGV[8] then redis.call('DEL', KEYS[9]) end
    return {epoch, last, over[1], over[2]}
  end
end
if ARGV[8] then record(KEYS[6], KEYS[7], KEYS[8], KEYS[9], ARGV[8], ARGV[9], ARGV[10]) end
return {epoch, last}
