-- nextfence.lua: the fencing rule, prepended to every script that hands out
-- a lock to a new owner (acquire.lua, acquireall.lua, release.lua's grant) so
-- it is written once. (A hand-off inside a process takes the holder's + 1:
-- handoff.lua.)
--
-- The next token of a lock whose last token is `last` (a decimal string or
-- false): max(last + 1, server TIME in microseconds), as a decimal string.
-- t is a TIME reply the caller already has (nil: asked here), so a script
-- that needs the time for something else asks once.
--
-- The common case (last is behind the clock) is built and compared as
-- strings: TIME's seconds followed by its microseconds padded to six digits,
-- and two decimal strings without leading zeros compare as numbers when the
-- longer is larger and equal lengths compare digit by digit (Lua compares
-- with strcoll, and every locale orders digits 0 to 9). That needs every
-- writer of the field f to write a plain decimal (string.format('%d'),
-- TIME's digits, or fence.lua's integer argument): no sign, exponent or
-- leading zero. Lua's number conversions (tonumber, string.format) were the
-- dearest part of the acquire script after its Redis calls; only a last
-- token at or ahead of the clock pays for them. Tokens stay below 2^53,
-- exact as a Lua number.
local function next_fence(last, t)
  t = t or redis.call('TIME')
  local us = t[2]
  local fence = t[1] .. string.sub('00000', #us) .. us
  if last and (#last > #fence or (#last == #fence and last >= fence)) then
    fence = string.format('%d', tonumber(last) + 1)
  end
  return fence
end
