-- shared_acquire.lua: one attempt on a lock that admits several holders at
-- once: a semaphore (at most ARGV[6] permits) or a read/write lock (many
-- readers or one writer, writers first).
--
-- KEYS[1]  the shared hash (layout v1: <prefix>:v1:s:... or :rw:..., keys.go)
-- ARGV[1]  owner token (random per lease)
-- ARGV[2]  TTL in milliseconds
-- ARGV[3]  owner id (WithOwner)
-- ARGV[4]  holder metadata (Observer)
-- ARGV[5]  mode: 's' a permit, 'r' read, 'w' write
-- ARGV[6]  limit (permits; 's' only)
-- ARGV[7]  lifetime of a waiting reader's or writer's mark (ms); 0: a
--          caller that will not wait (TryLock, NoWait) leaves none
--
-- The hash has, per holder, p<token> = "<expiry ms>:<fence>:<mode>" and
-- d<token> = "<owner id>\n<metadata>"; per waiting writer x<token>, per
-- waiting reader y<token> and per waiter for a permit z<token> =
-- "<expiry ms>:<seq>:<owner id>"; n the last
-- waiting sequence number; f the last fencing token; r the last released
-- token. A holder whose expiry passed is gone (a crashed holder's permit
-- frees itself by expiry, like a mutex's key), and so is a mark: entries
-- are dropped when an attempt meets them. The hash lives as long as its
-- longest entry.
--
-- Waiters for a permit are served in the order they started waiting (z
-- marks, like the sides' below): a permit that frees goes to the one
-- waiting longest, not to a newcomer or a luckier waiter.
--
-- Readers and writers are served in the order they started waiting (their
-- seq, taken at their first refusal and kept by every later attempt while
-- their mark lives): a reader is not admitted while a writer that waits
-- longer than it (or at all, for a reader that has not waited) is queued,
-- and a writer is not admitted while a reader that waits longer than it
-- does. So a writer waits for the readers already in and those queued
-- before it, never for a stream of new ones; and readers queued behind one
-- writer go in together when it releases, before the writers after them.
-- A writer or reader that takes the lock drops its own mark.
--
-- Returns the fence when the caller holds a permit / the lock now (also for
-- a re-send of an attempt that already succeeded: same token, its expiry
-- refreshed), or {0, owner, metadata, ms until it frees, fence} naming the
-- live holder that expires first (a waiter queued ahead when only marks
-- stand in the way: owner id, no metadata, its mark's remaining life,
-- fence 0).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local mode, ttl = ARGV[5], tonumber(ARGV[2])
local live, writer, mine, last = 0, false, nil, nil
local first, firstExp, firstFence = nil, nil, nil
local myMark, myseq = nil, nil
local wq, rq, sq = nil, nil, nil -- the longest-waiting other writer / reader / permit: {seq, exp, owner}
local gone, maxExp = {}, 0
for i = 1, #all, 2 do
  local k, v = all[i], all[i + 1]
  local c = string.sub(k, 1, 1)
  if k == 'f' then
    last = v
  elseif c == 'p' then
    local exp, fence, m = string.match(v, '^(%d+):(%d+):(%a)$')
    exp = tonumber(exp)
    local tok = string.sub(k, 2)
    if exp < now then
      gone[#gone + 1] = k
      gone[#gone + 1] = 'd' .. tok
    elseif tok == ARGV[1] then
      mine = fence
    else
      live = live + 1
      if m == 'w' then writer = true end
      if exp > maxExp then maxExp = exp end
      if not first or exp < firstExp then first, firstExp, firstFence = tok, exp, fence end
    end
  elseif c == 'x' or c == 'y' or c == 'z' then
    local exp, seq, owner = string.match(v, '^(%d+):(%d+):(.*)$')
    exp, seq = tonumber(exp), tonumber(seq)
    if exp < now then
      gone[#gone + 1] = k
    elseif string.sub(k, 2) == ARGV[1] then
      myMark, myseq = k, seq
      if exp > maxExp then maxExp = exp end
    else
      if exp > maxExp then maxExp = exp end
      local w = {seq, exp, owner}
      if c == 'x' and (not wq or seq < wq[1]) then wq = w end
      if c == 'y' and (not rq or seq < rq[1]) then rq = w end
      if c == 'z' and (not sq or seq < sq[1]) then sq = w end
    end
  end
end
-- ahead: a waiter of the other side queued before this caller
local function ahead(q)
  return q and (not myseq or q[1] < myseq)
end
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
end
local function keep(exp)
  if exp > maxExp then maxExp = exp end
  redis.call('PEXPIRE', KEYS[1], math.max(maxExp - now, 1))
end
if mine then -- a re-send, or a renewal that raced: refresh, same fence
  redis.call('HSET', KEYS[1], 'p' .. ARGV[1], (now + ttl) .. ':' .. mine .. ':' .. mode)
  keep(now + ttl)
  return tonumber(mine)
end
local ok, blocker
if mode == 's' then
  ok = live < tonumber(ARGV[6]) and not ahead(sq)
  blocker = ahead(sq) and sq
elseif mode == 'r' then
  ok = not writer and not ahead(wq)
  blocker = ahead(wq) and wq
else
  ok = live == 0 and not ahead(rq)
  blocker = ahead(rq) and rq
end
if ok then
  local fence = next_fence(last, t) -- nextfence.lua, prepended
  redis.call('HSET', KEYS[1], 'p' .. ARGV[1], (now + ttl) .. ':' .. fence .. ':' .. mode,
    'd' .. ARGV[1], ARGV[3] .. '\n' .. ARGV[4], 'f', fence)
  if myMark then
    redis.call('HDEL', KEYS[1], myMark)
  end
  keep(now + ttl)
  return tonumber(fence)
end
if tonumber(ARGV[7]) > 0 then -- queue, or keep the place
  local exp = now + tonumber(ARGV[7])
  local seq = myseq or redis.call('HINCRBY', KEYS[1], 'n', 1)
  local f = (mode == 'w' and 'x' or (mode == 'r' and 'y' or 'z')) .. ARGV[1]
  redis.call('HSET', KEYS[1], f, exp .. ':' .. seq .. ':' .. ARGV[3])
  keep(exp)
end
if not first then -- only a waiter queued ahead stands in the way
  return {0, blocker[3], '', blocker[2] - now, 0}
end
local d = redis.call('HGET', KEYS[1], 'd' .. first) or ''
local owner, meta = string.match(d, '^([^\n]*)\n(.*)$')
return {0, owner or '', meta or '', firstExp - now, firstFence}
