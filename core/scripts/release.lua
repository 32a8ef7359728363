-- release.lua: owner-checked release and wake-up, in one step; with waiters
-- queued (see acquire.lua), the lock goes straight to the first live one.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token, or a queue id leaving the wait queue
-- ARGV[2]  notification channel of the lock
-- ARGV[3]  how long the last fencing token is kept after release (ms);
--          absent to keep the lease's own expiry (the releasing Client
--          leaves it out when that expiry is already between 1 and 30 s
--          away: one call less on the path every request takes, and one
--          argument less, see acquire.lua for what each costs); '0' is read
--          as absent, as it was once sent for it (PEXPIRE 0 would delete
--          the hash, last token and all)
-- publish  (a local prepended to the script, not an argument: one argument
--          less; announcer in scripts.go) the publish command: 'publish', or 'spublish' on Redis
--          Cluster, where ARGV[2] is then a shard channel in KEYS[1]'s own
--          slot
--
-- Returns 1 + the number of subscribers that got the release message when
-- the token held the lock (1 when it had already released it: a re-sent
-- release, or when nobody waited), 0 when it did not.
--
-- The message goes out only when someone waits in Redis: the wait queue has
-- entries, or a waiter without a place in it (Redlock, acquire.lua's '*')
-- flagged the lock (field n). Every waiting head's refused attempt leaves
-- one or the other in the same step as the refusal, so the uncontended
-- release, the common one, publishes nothing.
--
-- Released, the lock is free with o empty (every script reads an empty o
-- as free); the last fencing token stays ARGV[3] ms, or what is left of the
-- lease's expiry (at least a second), so the next holder's token is larger
-- even within one microsecond of server time.
--
-- The message is 'released', or 'g:<queue id>' after a grant: the other
-- queued processes' heads need not wake for a lock they did not get.
--
-- Grant: when the wait queue has an entry whose waiter refreshed it within
-- its lifetime, that queue becomes the owner (o = its queue id) with the next
-- fencing token, for the entry's grant TTL only, and the owner id and
-- metadata its head last wrote (x<queue id>) become the holder's: a caller
-- refused meanwhile is told whom it waits for. Entries found expired on
-- the way are dropped. The message wakes the grantee, whose confirming
-- attempt (acquire.lua) turns the grant into its lease with its own TTL. A
-- grantee that died costs the others the grant TTL, not a lease TTL; one
-- that missed the message finds the grant by its next periodic attempt,
-- which comes before the grant TTL ends. The grant happens in the same
-- step as the release, so nobody can barge in between: this is what makes
-- the order across processes first come, first served.
--
-- Leave: a queue id that is not the owner has its entry removed (its
-- waiters gave up; leavequeue.lua, which also moves the queue's bounds).
-- A queue id that is the owner gives a grant back: the
-- lock goes to the next entry, as for any release.
-- Only what the common release needs is read first (each field read costs
-- Redis more than a call's fixed part); the queue's tail and the last token
-- are read when the queue has entries.
local h = redis.call('HMGET', KEYS[1], 'o', 'qh', 'n')
if h[1] == ARGV[1] then
  local granted = false
  if h[2] then
    local q = redis.call('HMGET', KEYS[1], 'qt', 'f')
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local last, gone = tonumber(q[1]), {}
    local seq = tonumber(h[2])
    while seq <= last and not granted do
      local f = 'q' .. seq
      local id = redis.call('HGET', KEYS[1], f)
      gone[#gone + 1] = f
      if id then
        local e = redis.call('HMGET', KEYS[1], 'i' .. id, 'x' .. id)
        gone[#gone + 1] = 'i' .. id
        gone[#gone + 1] = 'x' .. id
        local _, exp, gttl = string.match(e[1] or '', '^(%d+):(%d+):(%d+)$')
        if exp and tonumber(exp) >= now then
          local fence = next_fence(q[2], t) -- nextfence.lua, prepended
          -- The grantee's owner id and metadata, as its queue's head last
          -- wrote them, are the holder's until its attempt confirms.
          local owner, meta = string.match(e[2] or '', '^([^\n]*)\n(.*)$')
          redis.call('HSET', KEYS[1], 'o', id, 'f', fence, 'r', ARGV[1], 'w', owner or '', 'm', meta or '')
          redis.call('PEXPIRE', KEYS[1], gttl)
          granted = id
        end
      end
      seq = seq + 1
    end
    if seq > last then
      gone[#gone + 1] = 'qh'
      gone[#gone + 1] = 'qt'
    else
      redis.call('HSET', KEYS[1], 'qh', seq)
    end
    if not granted then
      gone[#gone + 1] = 'w'
      gone[#gone + 1] = 'm'
    end
    gone[#gone + 1] = 'n'
    redis.call('HDEL', KEYS[1], unpack(gone))
  end
  if not granted then
    -- Free: o empty, in the same write as r. w and m stay until the next
    -- holder overwrites them; nothing reads them while o is empty.
    redis.call('HSET', KEYS[1], 'o', '', 'r', ARGV[1])
    if h[3] then
      redis.call('HDEL', KEYS[1], 'n')
    end
    if ARGV[3] and ARGV[3] ~= '0' then
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
    end
  end
  if not h[2] and not h[3] then
    return 1 -- nobody waits in Redis: no message
  end
  return 1 + redis.call(publish, ARGV[2], granted and ('g:' .. granted) or 'released')
end
if redis.call('HGET', KEYS[1], 'r') == ARGV[1] then
  return 1
end
local e = redis.call('HGET', KEYS[1], 'i' .. ARGV[1])
if e then -- leave the wait queue (see Leave above)
  local id = ARGV[1]
  -- (leavequeue.lua)
end
return 0
