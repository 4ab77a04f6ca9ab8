-- A rate-limit hit on the limits and windows hashes: nil, or {limit, window start} when the
-- window is full (then nothing is counted). Windows are fixed minutes on the mock clock.
local function hit(limits, windows, kind, ident, now)
  local set = redis.call('HMGET', limits, 'enabled', 'ws:' .. ident, 'default')
  if set[1] == '0' then return nil end
  local limit = false
  if kind == 'workspace' then limit = set[2] end
  limit = tonumber(limit or set[3] or '0')
  if limit <= 0 then return nil end
  local field = kind .. ':' .. ident
  local start, count = now, 0
  local window = redis.call('HGET', windows, field)
  if window then
    local s, c = string.match(window, '(%-?%d+) (%d+)')
    start, count = tonumber(s), tonumber(c)
    -- a clock moved back before the start opens a fresh window too (DECISIONS H24)
    if now < start or now - start >= {{WINDOW_MS}} then start, count = now, 0 end
  end
  if count >= limit then return {limit, start} end
  redis.call('HSET', windows, field, start .. ' ' .. (count + 1))
  return nil
end
