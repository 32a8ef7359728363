-- shared_acquire.lua: one attempt on a semaphore or a side of a read/write
-- lock (books, queue and grants: shared_lib.lua, prepended).
-- Cost: O(1) in the number of waiters, on the books (one field) and the
-- wait queue (three lists, an entry per waiting process and side); but a
-- rescan, and a refused attempt whose named holder left (below), read the
-- whole hash: holders, waiting processes, at most max_tombstones
-- tombstones (shared_lib.lua, Cost).
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
--          side ('' for a caller that does not queue: TryAcquire, NoWait)
-- ARGV[9]  entry lifetime (ms) and ARGV[10] grant TTL (ms), with a queue id
-- ARGV[11] a reader's pass: the place of the reader admitted at the head
--          of its local queue, which the callers queued behind it then
--          share ('' for none): they go in before any writer that queued
--          after that place, as readers queued before a writer go in
--          together
-- ARGV[12] present when callers of the same local queue wait behind this
--          one (with a queue id): the holder metadata of the next of them.
--          Once this caller is in, if that one would be refused, the queue
--          keeps (or takes again) its place in the wait queue for them in
--          the same step, so it need not ask only to be queued; the entry
--          then describes that next caller, who takes the queue's next
--          grant, not this one, which holds
--
-- Admission: a permit while fewer than the caller's limit are held; a
-- reader while no writer holds and none is queued (before its pass); a
-- writer while nobody holds. Grants included: capacity a waiter can use is
-- granted to it at once (settle), so a newcomer cannot take it. A refused
-- caller with a queue id puts its process in the queue (or refreshes its
-- entry, keeping the place); a grant to that queue is taken by its next
-- attempt, which confirms it: the grant's fence, the caller's own TTL.
--
-- Returns {1, fence, place, queued, granted} when the caller holds a
-- permit / the side now (also for a re-send of an attempt that got in: same
-- token, its expiry refreshed); place is a reader's place for its local
-- queue's pass (0 for the others), queued 1 when its queue is in the wait
-- queue now, granted 1 when it took a grant to its queue (the place is then
-- its queue's entry's).
-- Otherwise {0, owner, metadata, ms until the first holder can expire,
-- fence, why}, naming what stood in the way, why: 'h' a holder, 'p' a
-- grant promised to an earlier waiter (its owner id), 'q' a writer queued
-- before the reader (its owner id, fence 0).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tok, ttl, mode, channel, q = ARGV[1], tonumber(ARGV[2]), ARGV[5], ARGV[7], ARGV[8]
local hk, tk = 'H' .. mode, 'T' .. mode
local b, stale, h = books(now, 'p' .. tok, 'p' .. q, 'A' .. q, 'I' .. q, 'Z' .. tok, 'Z' .. q)
local mine, g, gplace, at = h[5], h[6], h[7], h[8]
if b.r == tok or (h[9] and tonumber(h[9]) >= now) or (q ~= '' and h[10] and tonumber(h[10]) >= now) then
  -- An attempt that arrives after its token was released or given back,
  -- or after its queue left (r, a tombstone: shared_lib.lua): its caller
  -- is gone, so it takes nothing and queues nothing.
  return {0, '', '', 0, 0, 'h'}
end
if stale then
  settle(b, mode ~= 's', now, t, channel)
  finish(b, now) -- so that what the rescan changed is what is read next
  sets, dels, b.ch, b.expire, b.zch = {}, {}, false, nil, false
  h = redis.call('HMGET', K, 'p' .. tok, 'p' .. q, 'A' .. q, 'I' .. q)
  mine, g, gplace, at = h[1], h[2], h[3], h[4]
end

-- enqueue puts q's process at the end of its list in the wait queue, or
-- refreshes its entry (keeping its place); the entry lives until exp.
local function enqueue(exp, meta)
  local place = at and string.match(at, ':(%d+)$')
  if not place then
    local seq = (tonumber(b[tk]) or 0) + 1
    b[tk], b.ch = seq, true
    if b[hk] == '' then b[hk] = seq end
    b.S = (tonumber(b.S) or 0) + 1
    place = b.S
    at = mode .. seq .. ':' .. place
    sets[#sets + 1], sets[#sets + 2] = 'I' .. q, at
  end
  sets[#sets + 1] = 'Q' .. string.match(at, '^(%a%d+)')
  sets[#sets + 1] = q .. ':' .. place .. ':' .. exp .. ':' .. ARGV[10] .. ':' .. ARGV[6] .. ':' .. ARGV[3] .. '\n' .. meta
  keep(b, now, exp)
end

local function admit(fence, place, granted)
  local n = #sets
  sets[n + 1], sets[n + 2] = 'p' .. tok, (now + ttl) .. ':' .. fence .. ':' .. mode
  sets[n + 3], sets[n + 4] = 'd' .. tok, ARGV[3] .. '\n' .. ARGV[4]
  keep(b, now, now + ttl)
  if not b.E or now + ttl < b.E then b.E, b.ch = now + ttl, true end
  -- The callers behind this one keep the queue's place only when the next
  -- of them would be refused now: a writer's, a full semaphore's, a
  -- reader's behind a queued writer. Else the place goes and they ask.
  local full = mode == 'w' or (mode == 's' and b.C >= tonumber(ARGV[6])) or (mode == 'r' and head(b, 'w', now) ~= nil)
  local queued = 0
  if q ~= '' and ARGV[12] and full then
    enqueue(now + tonumber(ARGV[9]), ARGV[12])
    queued = 1
  elseif q ~= '' and at then
    unlink(b, q, nil, nil, at)
  end
  finish(b, now)
  return {1, fence, place, queued, granted and 1 or 0}
end

if mine then -- a re-send of an attempt that got in: same fence, expiry refreshed
  return admit(string.match(mine, '^%d+:(%d+):'), 0)
end
if q ~= '' and g then -- a grant to this caller's queue: this attempt confirms it
  local n = #dels
  dels[n + 1], dels[n + 2], dels[n + 3] = 'p' .. q, 'd' .. q, 'A' .. q
  if b.W == q then b.W, b.ch = tok, true end
  if b.L == q then b.L, b.ch = tok, true end
  if b.P == q then b.P, b.ch = '', true end
  return admit(string.match(g, '^%d+:(%d+):'), tonumber(gplace or '0'), true)
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
    ok = not wq or (pass ~= nil and tonumber(wq.place) > pass)
    if not ok then why = 'q' end
  end
else
  ok = b.C == 0
end
if ok then
  local fence = next_fence(b.f, t) -- nextfence.lua, prepended
  b.f, b.C, b.L, b.ch = fence, b.C + 1, tok, true
  sets[#sets + 1], sets[#sets + 2] = 'f', fence
  if mode == 'w' then b.W = tok end
  local place = 0
  if mode == 'r' then place = pass or tonumber(b.S) or 0 end
  return admit(fence, place)
end

if q ~= '' then -- queue, or keep the place (a caller that queues sends life and grant)
  enqueue(now + tonumber(ARGV[9]), ARGV[4])
end
if why == 'q' then
  finish(b, now)
  local owner, meta = string.match(wq.owner, '^([^\n]*)\n(.*)$')
  local left = 0
  if b.E then left = math.max(b.E - now, 0) end
  return {0, owner or wq.owner, meta or '', left, 0, 'q'}
end
if who ~= '' and who == b.P then why = 'p' end
local nh = {}
if who ~= '' then nh = redis.call('HMGET', K, 'p' .. who, 'd' .. who) end
if not nh[1] and b.C > 0 then -- the holder last named has left: name another
  local all = redis.call('HGETALL', K)
  for i = 1, #all, 2 do
    local exp = string.match(all[i + 1], '^(%d+):%d+:%a$')
    if string.byte(all[i], 1) == 112 and exp and tonumber(exp) >= now then
      who = string.sub(all[i], 2)
      b.L, b.ch = who, true
      nh = redis.call('HMGET', K, 'p' .. who, 'd' .. who)
      break
    end
  end
end
finish(b, now)
local owner, meta = string.match(nh[2] or '', '^([^\n]*)\n(.*)$')
local left = 0
if b.E then left = math.max(b.E - now, 0) end
return {0, owner or '', meta or '', left, tonumber(string.match(nh[1] or '', '^%d+:(%d+):') or '0'), why}
