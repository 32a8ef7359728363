-- delete.lua: a fenced delete. It removes the value and leaves a tombstone
-- (the token, without a value) for keep, so a late writer with an older
-- token is still refused after the delete.
--
-- KEYS[1]  the record
-- ARGV[1]  token
-- ARGV[2]  keep in ms
--
-- Returns 1 when deleted (also when there was no value: the tombstone is
-- written anyway), or the stored token when it is newer than ARGV[1].
-- Idempotent per token, as set.lua.
local cur = redis.call('HGET', KEYS[1], 'f')
if cur and newer(cur, ARGV[1]) then
  return cur
end
redis.call('HDEL', KEYS[1], 'v')
redis.call('HSET', KEYS[1], 'f', ARGV[1], 'e', string.format('%d', now_ms()))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
