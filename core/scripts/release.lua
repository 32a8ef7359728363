-- release.lua: owner-checked release and wake-up, in one step.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  notification channel of the lock
-- ARGV[3]  how long the last fencing token is kept after release (ms)
-- ARGV[4]  the publish command: 'publish', or 'spublish' on Redis Cluster,
--          where ARGV[2] is then a shard channel in KEYS[1]'s own slot
--
-- Returns 1 + the number of subscribers that got the release message when
-- the token held the lock (1 when it had already released it: a re-sent
-- release), 0 when it did not. The subscriber count tells a process whether
-- waiters elsewhere exist (fairness of local hand-offs). Only the owner's
-- fields are removed; the last fencing token stays for ARGV[3] ms so the next
-- holder's token is larger even within one microsecond of server time.
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'o', 'w', 'm')
  redis.call('HSET', KEYS[1], 'r', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1 + redis.call(ARGV[4], ARGV[2], 'released')
end
if redis.call('HGET', KEYS[1], 'r') == ARGV[1] then
  return 1
end
return 0
