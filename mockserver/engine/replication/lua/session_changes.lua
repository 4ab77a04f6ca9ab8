-- ARGV: prefix, name, changes. Notes a session's changes (not for a session deleted meanwhile).
if redis.call('HEXISTS', ARGV[1] .. 'sessions', ARGV[2]) == 1 then
  redis.call('HSET', ARGV[1] .. 'changes', ARGV[2], ARGV[3])
end
return 1
