-- complete.lua: store a claim's answer, fenced by its token, and end the
-- claim, in one step (Lease.Complete).
--
-- KEYS[1]  the record hash (see claim.lua)
-- ARGV[1]  owner token of the claim
-- ARGV[2]  the claim's fencing token
-- ARGV[3]  the answer
-- ARGV[4]  retention (ms): how long the completed record is kept
-- publish  (a local prepended: announcer in scripts.go) 'publish' or
--          'spublish', on ARGV[5], the record's channel
-- ARGV[5]  the record's notification channel
--
-- Returns 1 when the token held the claim (or had completed it already:
-- a re-send), 0 when it did not: its claim expired and another took it
-- over, or it was abandoned. The newer owner's record is never touched.
local h = redis.call('HMGET', KEYS[1], 'o', 'f', 'n', 'r', 'd')
if h[1] == ARGV[1] and h[2] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'd', ARGV[3], 'o', '', 'r', ARGV[1])
  redis.call('HDEL', KEYS[1], 'e', 'k', 'w', 'm', 'n')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  if h[3] then
    redis.call(publish, ARGV[5], 'released')
  end
  return 1
end
if h[5] and h[4] == ARGV[1] then
  return 1
end
return 0
