-- Shared by the registry scripts: ARGV[1] is the namespace's prefix.
local P = ARGV[1]
local SUFFIXES = {{{SESSION_SUFFIXES}}}
local function unref(id)
  if type(id) ~= 'string' then return end
  if redis.call('HINCRBY', P .. 'snaprefs', id, -1) <= 0 then
    redis.call('HDEL', P .. 'snaprefs', id)
    redis.call('DEL', P .. 'snapshot:' .. id)
  end
end
local function drop(name)
  local entry = redis.call('HGET', P .. 'sessions', name)
  if not entry then return 0 end
  unref(cjson.decode(entry)['base'])
  for _, s in ipairs(SUFFIXES) do redis.call('DEL', P .. 'session:' .. name .. ':' .. s) end
  redis.call('HDEL', P .. 'sessions', name)
  redis.call('HDEL', P .. 'changes', name)
  return 1
end
local function now_ms()
  local t = redis.call('TIME')
  return t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
end
local function held(extra, record_bytes)
  local n = extra
  for _, v in ipairs(redis.call('HVALS', P .. 'changes')) do n = n + tonumber(v) end
  return n * record_bytes
end
