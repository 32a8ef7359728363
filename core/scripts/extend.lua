-- extend.lua: owner-checked renewal.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  new TTL in milliseconds
--
-- Returns 1 when the token still holds the lock (expiry reset to ARGV[2]),
-- 0 when another token or nobody holds it: the lease is lost.
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
