-- force.lua: operator release whoever holds the lock (ForceRelease).
--
-- KEYS[1]  the lock hash
-- ARGV[1]  notification channel of the lock
-- ARGV[2]  how long the last fencing token is kept (ms)
-- publish  (a local prepended to the script: announcer in scripts.go) the
--          publish command: 'publish', or 'spublish' on Redis Cluster,
--          where ARGV[1] is then a shard channel in KEYS[1]'s own slot
--
-- Returns 1 when a holder was removed, 0 when the lock was free. The fencing
-- token is kept, so the next holder still gets a larger one.
local o = redis.call('HGET', KEYS[1], 'o')
if not o or o == '' then -- absent or released: free
  return 0
end
redis.call('HDEL', KEYS[1], 'o', 'w', 'm')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call(publish, ARGV[1], 'released')
return 1
