-- acquireall.lua: take several locks at once, all or nothing, in one step:
-- Client.AcquireAll's one round trip when every lock hash is on one server
-- (a single primary, or one cluster slot).
--
-- KEYS[1..n]  the lock hashes, in the canonical order (multi.go)
-- ARGV[1]     TTL in milliseconds
-- ARGV[2]     owner id (WithOwner)
-- ARGV[1+2i]  owner token of lock i (one per lease)
-- ARGV[2+2i]  holder metadata of lock i (Observer)
--
-- Returns {1, fence 1, ..., fence n} when the caller now holds every lock
-- (also for a re-send: locks already carrying their tokens only have their
-- expiry refreshed), or {0, i, owner, metadata, pttl, fence} naming the
-- first lock i that another token holds (or a release granted to a waiting
-- process): then nothing was changed. The fields and the fencing rule are
-- acquire.lua's; nobody's wait queue entry is touched (AcquireAll waits, if
-- it must, through Acquire, one lock at a time).
local n = #KEYS
local seen = {}
for i = 1, n do
  local h = redis.call('HMGET', KEYS[i], 'o', 'f')
  if h[1] == '' then h[1] = false end -- released: free
  if h[1] and h[1] ~= ARGV[1 + 2 * i] then
    local x = redis.call('HMGET', KEYS[i], 'w', 'm')
    return {0, i, x[1] or '', x[2] or '', redis.call('PTTL', KEYS[i]), h[2] or '0'}
  end
  seen[i] = h
end
local t = redis.call('TIME')
local out = {1}
for i = 1, n do
  local h = seen[i]
  local fence = h[2]
  if not h[1] then
    fence = next_fence(h[2], t) -- nextfence.lua, prepended
    redis.call('HSET', KEYS[i], 'o', ARGV[1 + 2 * i], 'f', fence, 'w', ARGV[2], 'm', ARGV[2 + 2 * i])
  end
  redis.call('PEXPIRE', KEYS[i], ARGV[1])
  out[i + 1] = tonumber(fence)
end
return out
