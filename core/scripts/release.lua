-- release.lua: owner-checked release and wake-up, in one step.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  notification channel of the lock
-- ARGV[3]  how long the last fencing token is kept after release (ms)
--
-- Returns 1 when the token held the lock (or had already released it: a
-- re-sent release reports the same), 0 when it did not. Only the owner's
-- fields are removed; the last fencing token stays for ARGV[3] ms so the next
-- holder's token is larger even within one microsecond of server time.
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'o', 'w', 'm')
  redis.call('HSET', KEYS[1], 'r', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
if redis.call('HGET', KEYS[1], 'r') == ARGV[1] then
  return 1
end
return 0
