-- inspect.lua: a consistent snapshot of one lock (Inspect).
--
-- KEYS[1]  the lock hash
--
-- Returns {0, last fence} when free, {1, owner, metadata, pttl, fence} when held.
local h = redis.call('HMGET', KEYS[1], 'o', 'w', 'm', 'f')
if not h[1] or h[1] == '' then -- absent or released: free
  return {0, h[4] or '0'}
end
return {1, h[2] or '', h[3] or '', redis.call('PTTL', KEYS[1]), h[4] or '0'}
