-- shared_extend.lua: owner-checked renewal of one holder of a shared lock.
--
-- KEYS[1]  the shared hash
-- ARGV[1]  owner token
-- ARGV[2]  new TTL in milliseconds
--
-- Returns 1 when the token still holds its permit (its expiry reset to
-- ARGV[2] from now), 0 when it does not: removed, or expired — then its
-- permit was already free for others, and the lease is lost.
local v = redis.call('HGET', KEYS[1], 'p' .. ARGV[1])
if not v then
  return 0
end
local exp, rest = string.match(v, '^(%d+):(.*)$')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(exp) < now then
  return 0
end
redis.call('HSET', KEYS[1], 'p' .. ARGV[1], (now + tonumber(ARGV[2])) .. ':' .. rest)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
