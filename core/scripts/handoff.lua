-- handoff.lua: pass a held lock straight to the next waiter of the same
-- process, in one step (release + acquire in one round trip).
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token of the releasing lease
-- ARGV[2]  owner token of the receiving lease
-- ARGV[3]  TTL of the receiving lease (ms)
-- ARGV[4]  owner id          ARGV[5]  holder metadata of the receiver
--
-- Returns {1, fence, queued} when the receiver now holds the lock (also when
-- this is a re-send of a hand-off that already ran), {0} when the releasing
-- token did not hold it. queued is 1 when other processes' waiters are in
-- the lock's wait queue (see acquire.lua): the process then ends its run of
-- hand-offs soon and releases, which grants the lock to the first of them.
-- Nobody is notified: the lock never became free.
--
-- The receiver's fencing token is the releaser's + 1, so the process knows
-- it before the reply and the receiver can start at once (Lease.handoff):
-- the releaser's token is the owner here, and every script that sets o sets
-- f with it, so f is the releaser's token. The TIME floor of nextfence.lua
-- is not needed: it guards a lock whose hash was lost, and then the
-- releaser is not the owner.
local h = redis.call('HMGET', KEYS[1], 'o', 'f', 'qh')
local queued = h[3] and 1 or 0
if h[1] ~= ARGV[1] then
  if h[1] == ARGV[2] then
    return {1, h[2], queued}
  end
  return {0}
end
local fence = string.format('%d', tonumber(h[2]) + 1)
redis.call('HSET', KEYS[1], 'o', ARGV[2], 'f', fence, 'w', ARGV[4], 'm', ARGV[5], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, fence, queued}
