-- A journal entry recorded on its own (RedisJournal.record, posted after `RPUSH stage entry`).
-- KEYS: journal, jsizes, jmeta, stage, and for a session its epoch (gone with the session:
-- then the entry is dropped, not journaled under keys of no session). ARGV: the entry's size,
-- max entries, max bytes.
if KEYS[5] and redis.call('EXISTS', KEYS[5]) == 0 then
  redis.call('DEL', KEYS[4])
  return 0
end
record(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3])
return 1
