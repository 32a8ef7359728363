-- nextfence.lua: the fencing rule, prepended to every script that hands out
-- a lock to a new owner (acquire.lua, acquireall.lua, release.lua's grant) so
-- it is written once. (A hand-off inside a process takes the holder's + 1:
-- handoff.lua.)
--
-- The next token of a lock whose last token is `last` (a string or false):
-- max(last + 1, server TIME in microseconds), as a decimal string (a Lua
-- number would reach Redis as a float). Tokens stay below 2^53, exact in Lua.
-- t is a TIME reply the caller already has (nil: asked here), so a script
-- that needs the time for something else asks once.
local function next_fence(last, t)
  t = t or redis.call('TIME')
  local fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
  last = tonumber(last or '0')
  if last >= fence then fence = last + 1 end
  return string.format('%d', fence)
end
