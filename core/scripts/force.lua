-- force.lua: operator release whoever holds the lock (ForceRelease).
--
-- KEYS[1]  the lock hash
-- ARGV[1]  notification channel of the lock
-- ARGV[2]  how long the last fencing token is kept (ms)
--
-- Returns 1 when a holder was removed, 0 when the lock was free. The fencing
-- token is kept, so the next holder still gets a larger one.
if redis.call('HEXISTS', KEYS[1], 'o') == 0 then
  return 0
end
redis.call('HDEL', KEYS[1], 'o', 'w', 'm')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[1], 'released')
return 1
