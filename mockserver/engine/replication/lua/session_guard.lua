-- Before log.py's append, for a session: only into the incarnation the worker is in.
local e = redis.call('GET', KEYS[3])
if not e or e ~= ARGV[3] then return {0, 'gone'} end
