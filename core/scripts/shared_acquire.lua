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
-- ARGV[7]  lifetime of a waiting writer's mark (ms); 0: a writer that will
--          not wait (TryLock, NoWait) leaves none
--
-- The hash has, per holder, p<token> = "<expiry ms>:<fence>:<mode>" and
-- d<token> = "<owner id>\n<metadata>"; per waiting writer x<token> =
-- "<expiry ms>:<owner id>"; f the last fencing token; r the last released
-- token. A holder whose expiry passed is gone (a crashed holder's permit
-- frees itself by expiry, like a mutex's key): entries are dropped when an
-- attempt meets them. The hash lives as long as its longest entry, and at
-- least ARGV[2] after a grant.
--
-- A writer refused because the lock is held leaves its mark; while a live
-- mark of another writer exists no reader is admitted, so a writer waits
-- for the readers already in, not for a stream of new ones. A writer that
-- takes the lock drops its own mark.
--
-- Returns the fence when the caller holds a permit / the lock now (also for
-- a re-send of an attempt that already succeeded: same token, its expiry
-- refreshed), or {0, owner, metadata, ms until it frees, fence} naming the
-- live holder that expires first (a waiting writer when only marks stand
-- in the way: owner id, no metadata, its mark's remaining life, fence 0).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local mode, ttl = ARGV[5], tonumber(ARGV[2])
local live, writer, mine, last = 0, false, nil, nil
local first, firstExp, firstFence = nil, nil, nil
local waiting, waitExp, waitOwner = false, nil, nil
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
  elseif c == 'x' then
    local exp, owner = string.match(v, '^(%d+):(.*)$')
    exp = tonumber(exp)
    if exp < now then
      gone[#gone + 1] = k
    elseif string.sub(k, 2) ~= ARGV[1] then
      waiting = true
      if exp > maxExp then maxExp = exp end
      if not waitExp or exp < waitExp then waitExp, waitOwner = exp, owner end
    end
  end
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
local ok
if mode == 's' then
  ok = live < tonumber(ARGV[6])
elseif mode == 'r' then
  ok = not writer and not waiting
else
  ok = live == 0
end
if ok then
  local fence = next_fence(last, t) -- nextfence.lua, prepended
  redis.call('HSET', KEYS[1], 'p' .. ARGV[1], (now + ttl) .. ':' .. fence .. ':' .. mode,
    'd' .. ARGV[1], ARGV[3] .. '\n' .. ARGV[4], 'f', fence)
  if mode == 'w' then
    redis.call('HDEL', KEYS[1], 'x' .. ARGV[1])
  end
  keep(now + ttl)
  return tonumber(fence)
end
if mode == 'w' and tonumber(ARGV[7]) > 0 then
  local exp = now + tonumber(ARGV[7])
  redis.call('HSET', KEYS[1], 'x' .. ARGV[1], exp .. ':' .. ARGV[3])
  keep(exp)
end
if not first then -- only waiting writers' marks stand in the way
  return {0, waitOwner or '', '', waitExp - now, 0}
end
local d = redis.call('HGET', KEYS[1], 'd' .. first) or ''
local owner, meta = string.match(d, '^([^\n]*)\n(.*)$')
return {0, owner or '', meta or '', firstExp - now, firstFence}
