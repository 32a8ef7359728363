-- set.lua: a fenced write.
--
-- KEYS[1]  the record (a hash: v value, f last token, e value expiry in ms)
-- ARGV[1]  value
-- ARGV[2]  token
-- ARGV[3]  TTL of the value in ms (0: no expiry)
-- ARGV[4]  keep: how long the record outlives its value, in ms
--
-- Returns 1 when written, or the stored token (a string) when it is newer
-- than ARGV[2]: then nothing is written. A token equal to the stored one is
-- written again (the same lease writing twice, or go-redis re-sending this
-- script after a timeout), so the script is idempotent per (value, token).
--
-- The field e is present exactly when the key has a TTL: a value with a TTL
-- (then e is when the value expires, and the key lives keep longer, so the
-- token keeps fencing late writers after the value is gone) or a record
-- without a value, left by delete.lua or claim.lua.
local r = redis.call('HMGET', KEYS[1], 'f', 'e')
if r[1] and newer(r[1], ARGV[2]) then
  return r[1]
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  local e = now_ms() + ttl
  redis.call('HSET', KEYS[1], 'v', ARGV[1], 'f', ARGV[2], 'e', string.format('%d', e))
  redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl + tonumber(ARGV[4])))
else
  redis.call('HSET', KEYS[1], 'v', ARGV[1], 'f', ARGV[2])
  if r[2] then
    redis.call('HDEL', KEYS[1], 'e')
    redis.call('PERSIST', KEYS[1])
  end
end
return 1
