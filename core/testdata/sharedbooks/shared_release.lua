-- shared_release.lua: owner-checked release of one holder of a semaphore
-- or a read/write lock, and the grant of what it frees to the waiters
-- (shared_lib.lua, prepended); or a waiting process leaving the queue.
-- Cost: O(1) in the number of waiters (amortised over the dead entries it
-- drops), on the books (one field) and the wait queue (three lists, an
-- entry per waiting process and side); a rescan reads the whole hash
-- (shared_lib.lua, Cost).
--
-- KEYS[1]  the shared hash
-- ARGV[1]  owner token, or a queue id leaving the queue (its waiters gave
--          up): its entry goes, and a grant it was given passes on
-- ARGV[2]  notification channel
-- ARGV[3]  how long the hash keeps its last fencing token once released (ms)
-- ARGV[4]  'rw' for a read/write lock, 's' for a semaphore
-- ARGV[5]  the releasing Client's queue id for this lock and side ('' for
--          none): whether its own next caller should ask at once; ARGV[1]
--          itself for a give-back (a queue leaving, a token whose attempt
--          got no answer), which leaves a tombstone whether or not it held
-- publish  (a local prepended to the script: announcer in scripts.go) the
--          publish command: 'publish', or 'spublish' on Redis Cluster
--
-- Returns 1 when the token held a permit or side (or had just released it:
-- the token is the last released one, a re-sent release), 0 otherwise:
-- expired (its capacity was free for others already) or never held; 2
-- instead of 1 when what it freed went to other processes' queues only
-- (not to ARGV[5]'s): the releasing Client's next caller, queued in Redis
-- already, need not ask (it would only be refused). The capacity it frees
-- goes to the heads of the queue in the same step (settle), each told by
-- 'g:<queue id>'; nothing is announced when nobody waits.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tok, rw = ARGV[1], ARGV[4] == 'rw'
local b, stale, h = books(now, 'p' .. tok, 'I' .. tok)
local res, changed = 0, stale
local givenBack = ARGV[5] == tok
if givenBack then
  -- An attempt of it may still be on its way (cut by its caller's budget,
  -- on another connection): a tombstone, kept as long as the last fencing
  -- token, makes it take nothing and queue nothing when it arrives
  -- (shared_acquire.lua). Give-backs are rare; a lease's release leaves
  -- none (r names it).
  sets[#sets + 1], sets[#sets + 2] = 'Z' .. tok, now + tonumber(ARGV[3])
  keep(b, now, now + tonumber(ARGV[3]))
  changed = true
end
if h[4] and (not stale or b.live[tok]) then -- (a rescan drops it when expired)
  local n = #dels
  dels[n + 1], dels[n + 2], dels[n + 3] = 'p' .. tok, 'd' .. tok, 'A' .. tok
  b.C, b.r, b.ch = b.C - 1, tok, true
  sets[#sets + 1], sets[#sets + 2] = 'r', tok
  if b.W == tok then b.W = '' end
  if b.L == tok then b.L = '' end
  if b.P == tok then b.P = '' end
  if b.C == 0 then b.E = nil end
  keep(b, now, now + tonumber(ARGV[3]))
  res, changed = 1, true
elseif b.r == tok then
  res = 1
elseif h[5] then -- a queue id leaving the queue
  unlink(b, tok, nil, nil, h[5])
  changed = true
end
if changed then
  settle(b, rw, now, t, ARGV[2])
  finish(b, now)
end
if res == 1 and #granted > 0 then
  res = 2
  for _, id in ipairs(granted) do
    if id == ARGV[5] then res = 1 end
  end
end
return res
