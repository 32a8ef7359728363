-- claim.lua: claim an idempotency record, or look it up, in one step
-- (Client.Claim).
--
-- KEYS[1]  the record hash (layout v1: <prefix>:v1:i:<key>, see keys.go)
-- ARGV[1]  owner token (random per claim)
-- ARGV[2]  the claim's lease TTL (ms)
-- ARGV[3]  owner id (WithOwner)
-- ARGV[4]  holder metadata (Observer)
-- ARGV[5]  fingerprint of the request
-- ARGV[6]  how long the record is kept while claimed (ms): the retention,
--          at least the TTL; an expired claim is remembered as long, so a
--          takeover says so
-- ARGV[7]  '1' when the caller waits for the answer: a refusal then flags
--          the record (field n) so that its completion or abandonment
--          announces itself (complete.lua, abandon.lua)
--
-- The record hash is a lock hash (o, f, w, m, r as in acquire.lua) whose
-- claim expires at its own field e (server ms) rather than with the key,
-- so the key outlives a crashed owner's claim and the next claim knows it
-- takes over; and whose answer, once stored, is the field d:
--
--   o  owner token of the live claim (absent or empty: none)
--   e  the claim's expiry (ms since the epoch, server time); renewed by
--      claim_extend.lua, the lease's renewal
--   f  last fencing token: next_fence (nextfence.lua), so every claim's
--      token is larger than every earlier claim's of the record
--   p  fingerprint of the claiming request
--   d  the stored answer (complete.lua): the record is completed
--   k  '1' when the live claim took over an expired one
--   w, m  owner id and metadata of the claim's holder
--   r  the last token that completed or abandoned its claim: a re-sent
--      completion or abandonment answers the same
--   n  a waiter waits for the answer: completion and abandonment publish
--
-- Order of the checks: a completed record first (its answer, or mismatch),
-- then the fingerprint (mismatch, decided before in-progress), then a live
-- claim (in progress), else the caller claims it.
--
-- Returns
--   {1, fence, takenOver}              claimed (also for a re-sent claim of
--                                      the same token: its expiry renewed)
--   {2, answer, fence}                 completed: the stored answer and the
--                                      token of the claim that stored it
--   {3}                                the record holds another fingerprint
--   {0, owner, metadata, ms, fence}    claimed by another owner whose claim
--                                      expires in ms
local h = redis.call('HMGET', KEYS[1], 'o', 'e', 'f', 'p', 'd', 'k')
if h[5] then
  if h[4] ~= ARGV[5] then
    return {3}
  end
  return {2, h[5], h[3] or '0'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local o = h[1]
if o == '' then o = false end
if o and h[4] and h[4] ~= ARGV[5] then
  return {3}
end
local exp = now + tonumber(ARGV[2])
if o == ARGV[1] then -- a re-send of this claim
  redis.call('HSET', KEYS[1], 'e', exp)
  return {1, h[3], tonumber(h[6] or '0')}
end
local left = o and (tonumber(h[2] or '0') - now) or 0
if left > 0 then
  if ARGV[7] == '1' then
    redis.call('HSET', KEYS[1], 'n', '1')
  end
  local x = redis.call('HMGET', KEYS[1], 'w', 'm')
  return {0, x[1] or '', x[2] or '', left, h[3] or '0'}
end
local took = o and 1 or 0 -- o set, its claim expired: a takeover
local fence = next_fence(h[3], t) -- nextfence.lua, prepended
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'e', exp, 'f', fence, 'p', ARGV[5], 'k', took, 'w', ARGV[3], 'm', ARGV[4])
local keep = math.max(tonumber(ARGV[6]), tonumber(ARGV[2]))
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
return {1, fence, took}
