-- shared_acquire.lua: one attempt on a semaphore or a side of a read/write
-- lock (books, queue and grants: shared_lib.lua, prepended).
--
-- KEYS[1]  the shared hash (<prefix>:v1:sk:... or :rk:..., keys.go)
-- ARGV[1]  owner token (random per lease)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  owner id (WithOwner)
-- ARGV[4]  holder metadata (Observer)
-- ARGV[5]  mode: 's' a permit, 'r' read, 'w' write
-- ARGV[6]  limit: the permits of a semaphore as this caller counts them; 0 for a side
-- ARGV[7]  notification channel (a rescan may free capacity, and grant it)
-- ARGV[8]  queue id: the caller Client's local queue for this lock and
--          side ('' for a caller that does not queue: TryAcquire, NoWait,
--          and a queue's attempts until one meets the lock held)
-- ARGV[9]  entry lifetime (ms) and ARGV[10] grant TTL (ms), with a queue id
-- ARGV[11] a reader's pass: the place of the reader admitted at the head
--          of its local queue, which the callers queued behind it then
--          share ('' for none): they go in before any writer that queued
--          after that place, as readers queued before a writer go in
--          together
-- ARGV[12] '1' when callers of the same local queue wait behind this one
--          (with a queue id): once this caller is in, the queue keeps (or
--          takes again) its place in the wait queue for them, in the same
--          step, so the next of them need not ask only to be queued
--
-- Admission: a permit while fewer than the caller's limit are held; a
-- reader while no writer holds and none is queued (before its pass); a
-- writer while nobody holds. Grants included: capacity a waiter can use is
-- granted to it at once (settle), so a newcomer cannot take it. A refused
-- caller with a queue id puts its process in the queue (or refreshes its
-- entry, keeping the place); a grant to that queue is taken by its next
-- attempt, which confirms it: the grant's fence, the caller's own TTL.
--
-- Returns {1, fence, place, queued} when the caller holds a permit / the
-- side now (also for a re-send of an attempt that got in: same token, its
-- expiry refreshed); place is a reader's place for its local queue's pass
-- (0 for the others), queued 1 when its queue is in the wait queue now. Otherwise {0, owner, metadata, ms until the first holder can
-- expire, fence, why}, naming what stood in the way, why: 'h' a holder,
-- 'p' a grant promised to an earlier waiter (its owner id), 'q' a writer
-- queued before the reader (its owner id, fence 0).
local t = redis.call('TIME')
local now = now_ms(t)
local tok, ttl, mode, channel, q = ARGV[1], tonumber(ARGV[2]), ARGV[5], ARGV[7], ARGV[8]
local b, stale
if q ~= '' then
  b, stale = books(now, 'p' .. tok, 'p' .. q, 'A' .. q, 'I' .. q)
else
  b, stale = books(now, 'p' .. tok)
end
if stale then
  settle(b, mode ~= 's', now, t, channel)
end

-- enqueue puts q's process at the end of its list in the wait queue, or
-- refreshes its entry (keeping its place); the entry lives until exp.
local function enqueue(exp)
  local at = fetch('I' .. q)
  local place = at and string.match(fetch('Q' .. at) or '', '^[^:]*:(%d+):')
  if not place then
    local seq = (b['T' .. mode] or 0) + 1
    b['T' .. mode] = seq
    b['H' .. mode] = b['H' .. mode] or seq
    b.S = (b.S or 0) + 1
    at, place = mode .. seq, b.S
    put('I' .. q, at)
  end
  put('Q' .. at, q .. ':' .. place .. ':' .. exp .. ':' .. ARGV[10] .. ':' .. ARGV[6] .. ':' .. ARGV[3])
  keep(b, exp)
end

local function admit(fence, place)
  put('p' .. tok, (now + ttl) .. ':' .. fence .. ':' .. mode)
  put('d' .. tok, ARGV[3] .. '\n' .. ARGV[4])
  keep(b, now + ttl)
  local queued = 0
  if q ~= '' and ARGV[12] == '1' then -- the callers behind it keep a place
    enqueue(now + tonumber(ARGV[9]))
    queued = 1
  elseif q ~= '' then
    leave(b, q)
  end
  finish(b, now)
  return {1, fence, place, queued}
end

local mine = fetch('p' .. tok)
if mine then -- a re-send of an attempt that got in: same fence, expiry refreshed
  return admit(string.match(mine, '^%d+:(%d+):'), 0)
end
if q ~= '' then -- a grant to this caller's queue: this attempt confirms it
  local g, gplace = fetch('p' .. q, 'A' .. q)
  if g then
    drop('p' .. q)
    drop('d' .. q)
    drop('A' .. q)
    if b.W == q then b.W = tok end
    if b.L == q then b.L = tok end
    if b.P == q then b.P = '' end
    return admit(string.match(g, '^%d+:(%d+):'), tonumber(gplace or '0'))
  end
end

local pass = tonumber(ARGV[11] or '')
local ok, why, who, wq = false, 'h', b.L, nil
if mode == 's' then
  ok = b.C < tonumber(ARGV[6])
elseif mode == 'r' then
  if b.W ~= '' then
    who = b.W
  else
    wq = head(b, 'w', now)
    ok = not wq or (pass ~= nil and wq.place > pass)
    if not ok then why = 'q' end
  end
else
  ok = b.C == 0
end
if ok then
  local fence = next_fence(b.f, t) -- nextfence.lua, prepended
  put('f', fence)
  b.f, b.C, b.L = fence, b.C + 1, tok
  if mode == 'w' then b.W = tok end
  if not b.E or now + ttl < b.E then b.E = now + ttl end
  local place = 0
  if mode == 'r' then place = pass or b.S or 0 end
  return admit(fence, place)
end

if q ~= '' and ARGV[9] then -- queue, or keep the place
  enqueue(now + tonumber(ARGV[9]))
end
if why == 'q' then
  finish(b, now)
  return {0, wq.owner, '', 0, 0, 'q'}
end
if who == b.P and who ~= '' then why = 'p' end
local owner, meta, fence = name(who)
if fence == 0 and b.C > 0 then -- the holder last named has left: name another
  rescan(now, b)
  owner, meta, fence = name(b.L)
end
finish(b, now)
local left = 0
if b.E then left = math.max(b.E - now, 0) end
return {0, owner, meta, left, fence, why}
