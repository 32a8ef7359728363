-- lib.lua: helpers prepended to every script of package fence, so each is
-- written once.
--
-- newer(a, b) is a > b for tokens as stored: canonical decimal strings of
-- positive int64s (the client formats them; no sign, no leading zero).
-- Comparing the length first and then the digits is exact over the whole
-- int64 range, where Lua numbers (doubles) are exact only below 2^53.
local function newer(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

-- now_ms is the server's clock in milliseconds (TIME), as a Lua number.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
