-- abandon.lua: owner-checked release of a claim without an answer
-- (Lease.Release of a claim): the record is forgotten but for its last
-- fencing token, so the next claim runs at once, with a larger token.
--
-- KEYS[1]  the record hash (see claim.lua)
-- ARGV[1]  owner token of the claim
-- ARGV[2]  the record's notification channel
-- ARGV[3]  how long the last fencing token is kept (ms)
-- publish  (a local prepended: announcer in scripts.go) 'publish' or
--          'spublish'
--
-- Returns 1 when the token held the claim (or had abandoned it already:
-- a re-send), 0 when it did not.
local h = redis.call('HMGET', KEYS[1], 'o', 'n', 'r', 'd')
if h[1] == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'e', 'p', 'k', 'w', 'm', 'n')
  redis.call('HSET', KEYS[1], 'o', '', 'r', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if h[2] then
    redis.call(publish, ARGV[2], 'released')
  end
  return 1
end
if h[3] == ARGV[1] and not h[4] then
  return 1
end
return 0
