-- fence.lua: record a Redlock lease's fencing token on a node (Redlock only).
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  the lease's fencing token (the max over the granting nodes)
--
-- Returns 1 when the token still owns the lock here (f is raised to
-- ARGV[2]), 0 otherwise. Once a majority recorded the token, any later
-- majority overlaps one of these nodes, so the next token is larger.
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then
  return 0
end
local f = tonumber(redis.call('HGET', KEYS[1], 'f') or '0')
if f < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'f', ARGV[2])
end
return 1
