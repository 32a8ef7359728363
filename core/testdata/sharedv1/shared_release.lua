-- shared_release.lua: owner-checked release of one holder of a shared lock
-- (shared_acquire.lua), and the wake-up of its waiters.
--
-- KEYS[1]  the shared hash
-- ARGV[1]  owner token
-- ARGV[2]  notification channel
-- ARGV[3]  how long the hash keeps its last fencing token once empty (ms)
-- publish  (a local prepended to the script: announcer in scripts.go) the
--          publish command: 'publish', or 'spublish' on Redis Cluster
--
-- Returns 1 when the token held a permit (or had just released it: the
-- token is the last released one, a re-sent release), 0 otherwise: expired
-- (its permit was free for others already) or never held. A reader or
-- writer that gave up waiting releases its token too: that drops its mark,
-- so the other side is not held back for the mark's lifetime.
local v = redis.call('HGET', KEYS[1], 'p' .. ARGV[1])
if v then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HDEL', KEYS[1], 'p' .. ARGV[1], 'd' .. ARGV[1])
  if tonumber(string.match(v, '^(%d+):')) < now then
    return 0
  end
  redis.call('HSET', KEYS[1], 'r', ARGV[1])
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
  redis.call(publish, ARGV[2], 'released')
  return 1
end
if redis.call('HGET', KEYS[1], 'r') == ARGV[1] then
  return 1
end
if redis.call('HDEL', KEYS[1], 'x' .. ARGV[1], 'y' .. ARGV[1], 'z' .. ARGV[1]) == 1 then
  -- a waiter left the queue: those it held back may go
  redis.call(publish, ARGV[2], 'released')
end
return 0
