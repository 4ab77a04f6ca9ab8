-- ARGV: prefix, name. Returns 1 when deleted, 0 when there was no such session.
return drop(ARGV[2])
