-- claim.lua: a fenced read. It records the token as the last one, as a
-- write does, and returns the value, in one step: from then on a write (or
-- claim) with an older token is refused, so nothing an older holder sends
-- can land between this read and the claimer's write.
--
-- KEYS[1]  the record
-- ARGV[1]  token
-- ARGV[2]  keep in ms
--
-- Returns {value or false, token or false}, what get.lua would have
-- returned just before, when claimed; or the stored token (a string) when it
-- is newer than ARGV[1]: then nothing is written. Idempotent per token, as
-- set.lua: a re-sent claim finds its own token and claims again.
--
-- The value and its expiry are left as they are. A record without a value
-- (never written, deleted, expired) keeps the claimed token for keep from
-- now: it gets the field e (when it had no value since) and that expiry, as
-- a tombstone does, so a later write without TTL makes it permanent again.
local r = redis.call('HMGET', KEYS[1], 'v', 'f', 'e')
if r[2] and newer(r[2], ARGV[1]) then
  return r[2]
end
local now = now_ms()
local v = r[1]
if v and r[3] and now >= tonumber(r[3]) then
  v = false
end
if not r[1] and not r[3] then
  -- no record: a tombstone with the claimed token
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 'e', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('HSET', KEYS[1], 'f', ARGV[1])
  if r[3] and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    -- the value has expired: the token outlives the claim by keep
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
end
return {v, r[2]}
