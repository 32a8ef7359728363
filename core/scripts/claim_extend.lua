-- claim_extend.lua: owner-checked renewal of a claim (the extend.lua of
-- an idempotency record, see claim.lua).
--
-- KEYS[1]  the record hash
-- ARGV[1]  owner token
-- ARGV[2]  new TTL in milliseconds
--
-- Returns 1 when the token still holds the claim (its expiry e reset to
-- now + ARGV[2], and the key kept at least that long), 0 when another
-- token or nobody holds it: the lease is lost.
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'e', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl)
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
