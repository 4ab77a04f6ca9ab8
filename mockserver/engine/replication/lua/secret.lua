-- KEYS: meta. ARGV: a secret. The namespace's secret for signing cursors (`cursor_secret`):
-- the one stored, else this one, stored. Every worker and process of a namespace signs and
-- checks cursors with it, so a `next_cursor` is good on any of them.
redis.call('HSETNX', KEYS[1], 'cursor_secret', ARGV[1])
return redis.call('HGET', KEYS[1], 'cursor_secret')
