-- acquire.lua: take the lock if it is free, in one step.
--
-- KEYS[1]  the lock hash (layout v1, see keys.go)
-- ARGV[1]  owner token (random per lease)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  owner id (WithOwner)
-- ARGV[4]  holder metadata (Observer)
--
-- Returns {1, fence} when the caller now holds the lock, also when this is a
-- re-send of an acquire that already succeeded (same token: harmless, it only
-- refreshes the expiry). Returns {0, owner, metadata, pttl, fence} when another
-- token holds it, so a waiter learns who it waits for in the same round trip.
--
-- The fencing token is max(last token + 1, server TIME in microseconds): it
-- increases across holders while the hash exists and, after data loss, as long
-- as the server clock does not go back. Nothing is kept per lock name forever:
-- after release the hash keeps only the last token, for a few seconds.
local h = redis.call('HMGET', KEYS[1], 'o', 'f', 'w', 'm')
local o = h[1]
if o == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, h[2]}
end
if o then
  return {0, h[3] or '', h[4] or '', redis.call('PTTL', KEYS[1]), h[2] or '0'}
end
local fence = next_fence(h[2]) -- nextfence.lua, prepended
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', fence, 'w', ARGV[3], 'm', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, fence}
