-- shared_extend.lua: owner-checked renewal of one holder of a shared lock.
--
-- KEYS[1]  the shared hash
-- ARGV[1]  owner token
-- ARGV[2]  new TTL in milliseconds
--
-- Returns 1 when the token still holds its permit (its expiry reset to
-- ARGV[2] from now), 0 when it does not: removed, or expired — then its
-- permit was already free for others, and the lease is lost. A renewal
-- that shortens the holder's expiry below the books' lower bound of the
-- holders' expiries (E in B, shared_lib.lua) lowers it too, so that a
-- holder that shortened its TTL and died frees its permit at its own
-- expiry.
local h = redis.call('HMGET', KEYS[1], 'p' .. ARGV[1], 'B')
local v = h[1]
if not v then
  return 0
end
local exp, rest = string.match(v, '^(%d+):(.*)$')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(exp) < now then
  return 0
end
local until_ = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'p' .. ARGV[1], until_ .. ':' .. rest)
local c, w, e, tail = string.match(h[2] or '', '^([^,]*),([^,]*),([^,]*),(.*)$')
if e and e ~= '' and until_ < tonumber(e) then
  redis.call('HSET', KEYS[1], 'B', c .. ',' .. w .. ',' .. until_ .. ',' .. tail)
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
