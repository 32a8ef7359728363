-- leavequeue.lua: a queue's entry leaves the lock's wait queue (its fields:
-- see acquire.lua). Not a script of its own but a block, written once and
-- put where acquire.lua and release.lua have the line "-- (leavequeue.lua)"
-- (scripts.go), inside a block that sets id, the queue id, and e, its entry
-- ("seq:expiry ms:grant TTL"). A block, not a prepended function as
-- nextfence.lua is: a function is a closure made on every call of the
-- script, and these two scripts run on every request.
--
-- The entry's fields go. The bounds follow an entry leaving from either end
-- (qh one on, qt one back) and go with the only one, so that a queue emptied
-- from its ends leaves no bounds for the next release to walk and announce
-- itself to nobody; a gap left in the middle is skipped by the next
-- release's walk, as an expired entry is.
local seq = string.match(e, '^(%d+):')
local b = redis.call('HMGET', KEYS[1], 'qh', 'qt')
if b[1] == seq and b[2] == seq then
  redis.call('HDEL', KEYS[1], 'i' .. id, 'x' .. id, 'q' .. seq, 'qh', 'qt')
else
  redis.call('HDEL', KEYS[1], 'i' .. id, 'x' .. id, 'q' .. seq)
  if b[1] == seq then
    redis.call('HSET', KEYS[1], 'qh', seq + 1)
  elseif b[2] == seq then
    redis.call('HSET', KEYS[1], 'qt', seq - 1)
  end
end
