-- acquire.lua: take the lock if it is free, in one step; when it is held,
-- queue the caller's Client in the lock's wait queue.
--
-- KEYS[1]  the lock hash (layout v1, see keys.go)
-- ARGV[1]  owner token (random per lease)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  owner id (WithOwner)
-- ARGV[4]  holder metadata (Observer)
-- ARGV[5]  queue id: the caller Client's wait queue for this lock (absent
--          for a caller that does not queue: TryAcquire, NoWait, and a
--          queue's first attempt, before it has met the lock held; '*' for
--          one that waits for the release message without a place in the
--          queue: Redlock, whose refusal sets the lock's field n instead)
-- ARGV[6]  queue entry lifetime (ms): an entry not refreshed by an attempt
--          within it belongs to a dead waiter, and a release skips it
-- ARGV[7]  grant TTL (ms): how long a release's grant to this queue waits
--          for its confirming attempt
--          (ARGV[6] and ARGV[7] come exactly when ARGV[5] names a queue.)
--
-- After its Redis calls, what costs the script most is its arguments and
-- the fields it reads: on Redis 7.0, under callgrind, each argument costs
-- about 1,300 instructions and each field an HMGET reads about 2,300,
-- against about 7,000 for a call such as TIME. So the common attempt, a
-- first one on a free lock, sends the first four and reads two fields.
--
-- Returns the fence (a decimal string, as the hash keeps it: converting it to
-- a Lua number would cost the path every request takes more than the reply
-- saves) when the caller now holds the lock, also when this is a
-- re-send of an acquire that already succeeded (same token: harmless, it only
-- refreshes the expiry), and when a release had granted the lock to the
-- caller's queue (this attempt confirms the grant: the fence is the grant's,
-- and the lease's TTL starts now, with this round trip). Fences stay below
-- 2^53, exact as a Lua number. Returns {0, owner,
-- metadata, pttl, fence} when another token holds it, so a waiter learns who
-- it waits for in the same round trip; with a queue id the caller's queue
-- is then in the wait queue (appended, or its entry refreshed).
--
-- The wait queue lives in the lock's own hash (one key, one cluster slot):
-- qh and qt are the sequence numbers of its first and last entries, q<seq>
-- is the queue id of entry seq, i<queue id> is "seq:expiry ms:grant TTL", and
-- x<queue id> is "<owner id>\n<metadata>" of the queue's head at its last
-- attempt, which a release that grants the lock to the queue writes as the
-- holder's (w, m), so that a caller refused meanwhile learns whom it waits for.
-- A free lock is taken by whoever asks (the queue only decides who gets it
-- at a release); the caller's own entry is then removed.
--
-- The fencing token is max(last token + 1, server TIME in microseconds): it
-- increases across holders while the hash exists and, after data loss, as long
-- as the server clock does not go back. Nothing is kept per lock name forever:
-- after release the hash keeps only the last token, for a few seconds.
local q = ARGV[5] or ''
local h
if ARGV[6] then -- a queue with a place: is it in the wait queue?
  h = redis.call('HMGET', KEYS[1], 'o', 'f', 'i' .. q)
else
  h = redis.call('HMGET', KEYS[1], 'o', 'f')
end
local o = h[1]
if o == '' then o = false end -- released (release.lua): free
if o == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return h[2]
end
if o and o == q then
  -- Granted to this queue by a release: the grant becomes this lease.
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'w', ARGV[3], 'm', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return h[2]
end
if o then
  local x = redis.call('HMGET', KEYS[1], 'w', 'm', 'qt')
  if q == '*' then
    redis.call('HSET', KEYS[1], 'n', '1') -- someone waits: announce the release
  elseif q ~= '' then
    local t = redis.call('TIME')
    local exp = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[6])
    if h[3] then -- queued already: refresh the entry, keep the place
      local seq = string.match(h[3], '^(%d+):')
      redis.call('HSET', KEYS[1], 'i' .. q, seq .. ':' .. exp .. ':' .. ARGV[7], 'x' .. q, ARGV[3] .. '\n' .. ARGV[4])
    else
      local seq = tonumber(x[3] or '0') + 1
      local e = seq .. ':' .. exp .. ':' .. ARGV[7]
      if x[3] then
        redis.call('HSET', KEYS[1], 'qt', seq, 'q' .. seq, q, 'i' .. q, e, 'x' .. q, ARGV[3] .. '\n' .. ARGV[4])
      else
        redis.call('HSET', KEYS[1], 'qh', seq, 'qt', seq, 'q' .. seq, q, 'i' .. q, e, 'x' .. q, ARGV[3] .. '\n' .. ARGV[4])
      end
    end
  end
  return {0, x[1] or '', x[2] or '', redis.call('PTTL', KEYS[1]), h[2] or '0'}
end
if h[3] then -- a free lock with this caller still queued: leave the queue
  local id, e = q, h[3]
  -- (leavequeue.lua)
end
local fence = next_fence(h[2]) -- nextfence.lua, prepended
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', fence, 'w', ARGV[3], 'm', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return fence
