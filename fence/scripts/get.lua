-- get.lua: read a record.
--
-- KEYS[1]  the record
--
-- Returns {value or false, token or false}: the value is false when absent
-- or past its expiry e (by the server's clock, which also expires keys);
-- the token is the last one stored, kept after the value is gone.
local r = redis.call('HMGET', KEYS[1], 'v', 'f', 'e')
local v = r[1]
if v and r[3] and now_ms() >= tonumber(r[3]) then
  v = false
end
return {v, r[2]}
