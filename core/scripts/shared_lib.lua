-- shared_lib.lua: the books and the wait queue of a lock that admits
-- several holders at once, a semaphore or a read/write lock; prepended to
-- shared_acquire.lua and shared_release.lua (after nextfence.lua and the
-- announcer's publish), which call its functions. KEYS[1] is the lock's one
-- hash, so all of it lives in one cluster slot.
--
-- Holders, one pair per holder (as since the shared kinds began, so a
-- client of that first layout still counts every holder; see below):
--   p<token>  "<expiry ms>:<fence>:<mode>"   mode s (permit), r (read), w (write)
--   d<token>  "<owner id>\n<metadata>"
-- A permit or side promised to a waiting process (a grant, below) is a
-- holder whose token is that process's queue id, with the grant TTL as its
-- expiry; the queue's confirming attempt turns it into the caller's lease.
-- f  last fencing token        r  last released token (a re-sent release)
--
-- The books, so that a step need not read every holder (two do: a rescan,
-- below, and a refused attempt whose named holder left, shared_acquire.lua;
-- see Cost), all in one field B
-- ("C,W,E,L,P,F,R,X,S,Hs,Ts,Hr,Tr,Hw,Tw"; a field read costs a script far
-- more than splitting a string):
--   C  holders, grants included        W  the writer's token (absent: none)
--   E  a lower bound of the holders' expiries (absent: no holder)
--   L  a holder to name to a refused caller   P  the last grant not yet taken
--   F, R  f and r as these scripts last wrote them: a client of the first
--         layout writes f and r but not the books, so a difference means
--         the books are stale and are made again from the holders
--   X  the latest expiry these scripts asked the hash to live until (ms):
--      an entry that expires later raises the hash's expiry if PTTL says
--      it must (renewals raise it too), never lowers it
-- A step first checks F = f, R = r and E > now; otherwise (rarely: a
-- holder expired, or a first-layout client acted) it reads the holders once
-- (rescan), dropping the expired ones. A holder that crashed frees its
-- permit at its expiry that way.
--
-- The wait queue: one entry per waiting process and side, not per caller
-- (callers of one Client wait in its local queue, whose head alone talks to
-- Redis). Three lists, each a run of sequence numbers: s (waiters for a
-- permit), r (readers), w (writers):
--   H<l>, T<l>  (in B) first and last sequence numbers of list l ('' when empty)
--   Q<l><seq>   "<queue id>:<place>:<expiry ms>:<grant TTL ms>:<limit>:<owner id>\n<metadata>"
--               (the owner id and metadata of the queue's head at its last
--               attempt, or of the caller next in line when one went in
--               keeping the queue's place: a grant's holder description
--               until it is taken)
--   I<id>       "<l><seq>:<place>", where queue id's entry is
--   S           (in B) the last place given: places order readers and
--               writers across their two lists (first come, first served)
--   A<id>       the place of a grant to reader queue id, until taken
-- An entry not refreshed by its head's attempt within its lifetime belongs
-- to a dead process: skipped and dropped when met at the head of its list.
--
-- Tombstones: a token given back (its caller gave up on the attempt, or on
-- a lease whose release got no answer) or a queue id that left: an attempt
-- of it still on its way (sent before the give-back, delivered after it)
-- takes nothing and queues nothing when it arrives (shared_acquire.lua).
--   Z<id>  "<expiry ms>", kept as long as f after a release (ARGV[3] of
--          shared_release.lua), as since the books began
--   Y<k>   "<expiry ms>:<id>": tombstone number n is in slot k = n % M
--   Y      "h,t,e": the first and last numbers kept (h > t: none), and the
--          expiry of h's
-- M is max_tombstones (scripts.go prepends it): a key keeps at most its M
-- newest tombstones, 2M fields, whatever its callers do; a give-back
-- beyond them drops the oldest (shared_release.lua), and a step that finds
-- the oldest expired (e < now, in the HMGET it makes anyway) drops up to
-- four expired ones (sweep), so they leave as they expire, a few per step.
-- Why a bound is safe: no exclusion rests on a tombstone. An attempt whose
-- tombstone went early (M more give-backs on the key within its life) can
-- take a permit or side nobody will use, never renewed: it frees at that
-- attempt's TTL, as a crashed holder's does; a queue id's can put back a
-- place nobody refreshes, skipped once its entry lifetime ends. Why a
-- count and not only expiry: expiry alone bounds nothing against a flood
-- of give-backs within one tombstone life; the count does, and with M per
-- life none goes early (maxTombstones, shared.go). Why not a sequence per
-- process instead (a late attempt known by a number below its process's
-- last given back): the attempts of one process on one key are not
-- ordered (TryAcquire beside the queue's head), and the marks per process
-- would need an expiry and a bound of their own. Tombstones of a client
-- from before the slots (Z<id> alone) are dropped by a rescan once past.
--
-- Grants: whenever capacity frees (a release, an expiry found by a rescan,
-- a grant given back), settle() hands it to the heads of the lists in the
-- same step, with the next fencing token, and announces 'g:<queue id>' to
-- each; nobody else wakes. A semaphore's head gets a permit while fewer
-- than its own limit are held; readers queued before the first queued
-- writer go in together; a writer when nobody holds. So a newcomer never
-- finds capacity that a waiter could use, and admission needs no look at
-- the queue but, for a reader, at the first queued writer's place.
--
-- Cost: what a script spends goes mostly to its Redis calls and to the Lua
-- it runs (defining a function is a closure made on every call), so a step
-- reads what it needs in one HMGET, gathers what it changes and writes it
-- with one HDEL and one HSET at the end (finish; in chunks of 256
-- arguments, so that no list a step gathers meets Lua's unpack limit):
-- about seven calls for a release that grants, as many for the attempt that
-- takes the grant; a give-back past M tombstones, and a step that sweeps,
-- one HMGET more. Each queue entry is written, read at the head of its list
-- and dropped once, so a release is O(1) in the number of waiters
-- (amortised over the dead entries it drops). Two steps read the whole hash
-- (HGETALL): a rescan, at most once per expiry of the earliest holder, and
-- a refused attempt whose named holder (L) has left, to name another. Their
-- cost grows with the hash's entries: holders, one entry per waiting
-- process and side, and at most 2M fields of tombstones; not with the
-- callers waiting in each process's local queue, nor with the give-backs
-- a key has seen.
local K = KEYS[1]
local sets, dels = {}, {} -- what this step writes (finish)
local granted = {}        -- the queue ids it granted to

-- sweep drops the oldest tombstones that have expired, up to four (their
-- Z<id> and slot), when Y says the oldest has (b.ze < now); b.zch says
-- that Y changed.
local function sweep(b, now)
  local slots = {}
  for n = b.zh, math.min(b.zt, b.zh + 3) do
    slots[#slots + 1] = 'Y' .. (n % max_tombstones)
  end
  local v = redis.call('HMGET', K, unpack(slots))
  b.ze, b.zch = nil, true
  for i = 1, #slots do
    local exp, id = string.match(v[i] or '', '^(%d+):(.*)$')
    if exp and tonumber(exp) >= now then
      b.ze = tonumber(exp)
      return
    end
    if id then dels[#dels + 1] = 'Z' .. id end
    dels[#dels + 1] = slots[i]
    b.zh = b.zh + 1
  end
  if b.zh <= b.zt then b.ze = 0 end -- more may have expired: the next step looks
end

-- books reads the books, Y and the extra fields given in one call, makes
-- the books again when stale (rescan: b.live then holds the live tokens)
-- and sweeps expired tombstones; b.ch says that a book changed. Returns b,
-- whether it rescanned, and the HMGET's reply (the extras from its 5th
-- value on). C, E and X are numbers; the other books stay strings until a
-- step needs their value (Lua's number conversions cost a script more
-- than most of its Redis calls).
local function books(now, ...)
  local h = redis.call('HMGET', K, 'B', 'f', 'r', 'Y', ...)
  local C, W, E, L, P, F, R, X, S, Hs, Ts, Hr, Tr, Hw, Tw = string.match(h[1] or ',,,,,,,,,,,,,,',
    '^([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*)$')
  local b = {C = tonumber(C) or 0, W = W or '', L = L or '', P = P or '', f = h[2], r = h[3],
    S = S or '', Hs = Hs or '', Ts = Ts or '', Hr = Hr or '', Tr = Tr or '', Hw = Hw or '', Tw = Tw or '', raw = {C, E, X}}
  if E and E ~= '' then b.E = tonumber(E) end
  if X and X ~= '' then b.X = tonumber(X) end
  b.raw.c, b.raw.e, b.raw.x = b.C, b.E, b.X
  b.zh, b.zt = 1, 0 -- (no tombstone)
  if h[4] then
    local zh, zt, ze = string.match(h[4], '^(%d+),(%d+),(%d*)$')
    b.zh, b.zt, b.ze = tonumber(zh), tonumber(zt), tonumber(ze)
    if b.ze and b.ze < now and b.zh <= b.zt then sweep(b, now) end
  end
  local stale = (F or '') ~= (b.f or '') or (R or '') ~= (b.r or '') or (b.E and b.E < now)
  if stale then -- rescan: the holders again, the expired dropped
    local all = redis.call('HGETALL', K)
    local c, w, e, live, any = 0, '', nil, {}, ''
    for i = 1, #all, 2 do
      local k = all[i]
      if string.byte(k, 1) == 90 and tonumber(all[i + 1]) < now then -- 'Z': a tombstone past its time
        dels[#dels + 1] = k
      elseif string.byte(k, 1) == 112 then -- 'p'
        local exp, m = string.match(all[i + 1], '^(%d+):%d+:(%a)$')
        local tok = string.sub(k, 2)
        exp = tonumber(exp)
        if exp < now then
          dels[#dels + 1] = k
          dels[#dels + 1] = 'd' .. tok
          dels[#dels + 1] = 'A' .. tok
        else
          c, live[tok], any = c + 1, true, tok
          if m == 'w' then w = tok end
          if not e or exp < e then e = exp end
        end
      end
    end
    b.C, b.W, b.E, b.live = c, w, e, live
    if not live[b.L] then b.L = any end
    if not live[b.P] then b.P = '' end
    b.X = nil -- an older client may have set the expiry: set it again when needed
    b.ch = true
  end
  return b, stale, h
end

-- keep: the hash lives at least until exp (see finish). It is asked to live
-- twice as long from now, so that the steps until then need not ask again.
local function keep(b, now, exp)
  if not b.X or exp > b.X then b.X, b.ch, b.expire = exp + (exp - now), true, true end
end

-- finish writes what the step changed (books, Y and fields), and raises
-- the hash's expiry if an entry written outlives it (after the writes:
-- PEXPIRE on a hash not written yet does nothing).
local function finish(b, now)
  if b.ch then
    local r = b.raw
    local C, E, X = b.C, b.E or '', b.X or ''
    if C == r.c then C = r[1] end -- unchanged: the string read, not a conversion
    if b.E == r.e then E = r[2] or '' end
    if b.X == r.x then X = r[3] or '' end
    local n = #sets
    sets[n + 1] = 'B'
    sets[n + 2] = C .. ',' .. b.W .. ',' .. E .. ',' .. b.L .. ',' .. b.P .. ',' .. (b.f or '') .. ',' .. (b.r or '') .. ',' ..
      X .. ',' .. b.S .. ',' .. b.Hs .. ',' .. b.Ts .. ',' .. b.Hr .. ',' .. b.Tr .. ',' .. b.Hw .. ',' .. b.Tw
  end
  if b.zch then
    if b.zh > b.zt then
      dels[#dels + 1] = 'Y'
    else
      sets[#sets + 1], sets[#sets + 2] = 'Y', b.zh .. ',' .. b.zt .. ',' .. (b.ze or '')
    end
  end
  for i = 1, #dels, 256 do redis.call('HDEL', K, unpack(dels, i, math.min(i + 255, #dels))) end
  for i = 1, #sets, 256 do redis.call('HSET', K, unpack(sets, i, math.min(i + 255, #sets))) end
  if b.expire and redis.call('PTTL', K) < b.X - now then
    redis.call('PEXPIRE', K, b.X - now)
  end
end

-- head returns the first live entry of list l, dropping the dead entries
-- and gaps (entries that left from the middle) before it; nil when empty.
local function head(b, l, now)
  local hk, tk = 'H' .. l, 'T' .. l
  local s, t = tonumber(b[hk]), tonumber(b[tk])
  while s and t and s <= t do
    local q = 'Q' .. l .. s
    local v = redis.call('HGET', K, q)
    if v then
      local id, place, exp, gttl, limit, owner = string.match(v, '^([^:]*):(%d+):(%d+):(%d+):(%d+):(.*)$')
      if tonumber(exp) >= now then
        if s ~= tonumber(b[hk]) then b[hk], b.ch = s, true end
        return {id = id, l = l, seq = s, place = place, gttl = gttl, limit = limit, owner = owner}
      end
      dels[#dels + 1] = 'I' .. id
    end
    dels[#dels + 1] = q
    s = s + 1
  end
  if t then
    b[hk], b[tk], b.ch = '', '', true
  end
  return nil
end

-- unlink removes the entry of queue id at (list l, seq) from its list; the
-- bounds follow an entry leaving either end, and go with the only one.
-- at (instead of l and seq) is the entry's I<id>.
local function unlink(b, id, l, seq, at)
  if at then
    l, seq = string.sub(at, 1, 1), tonumber(string.match(at, '^%a(%d+)'))
  end
  dels[#dels + 1] = 'I' .. id
  dels[#dels + 1] = 'Q' .. l .. seq
  local hk, tk = 'H' .. l, 'T' .. l
  local h, t = tonumber(b[hk]), tonumber(b[tk])
  if h == seq and t == seq then
    b[hk], b[tk] = '', ''
  elseif h == seq then
    b[hk] = seq + 1
  elseif t == seq then
    b[tk] = seq - 1
  end
  b.ch = true
end

-- grant gives entry e (head) a permit or side (mode) as a holder under its
-- queue id, for its grant TTL, and announces it to that queue.
local function grant(b, e, mode, now, t, channel)
  unlink(b, e.id, e.l, e.seq)
  local fence = next_fence(b.f, t) -- nextfence.lua, prepended
  local exp = now + tonumber(e.gttl)
  local n = #sets
  sets[n + 1], sets[n + 2], sets[n + 3], sets[n + 4] = 'p' .. e.id, exp .. ':' .. fence .. ':' .. mode, 'd' .. e.id, e.owner
  sets[n + 5], sets[n + 6] = 'f', fence
  if mode == 'r' then
    sets[n + 7], sets[n + 8] = 'A' .. e.id, e.place
  end
  b.f, b.C, b.L, b.P, b.ch = fence, b.C + 1, e.id, e.id, true
  if mode == 'w' then b.W = e.id end
  if not b.E or exp < b.E then b.E = exp end
  keep(b, now, exp)
  redis.call(publish, channel, 'g:' .. e.id)
  granted[#granted + 1] = e.id
end

-- settle hands the capacity b has free to the queue's heads; rw: the
-- lock is a read/write lock (else a semaphore). A semaphore's heads are
-- granted while fewer than the last one's limit are held (a head asking
-- for more permits than that waits for the next release).
local function settle(b, rw, now, t, channel)
  if not rw then
    local e = head(b, 's', now)
    while e and b.C < tonumber(e.limit) do
      grant(b, e, 's', now, t, channel)
      if b.C >= tonumber(e.limit) then return end
      e = head(b, 's', now)
    end
    return
  end
  local w = head(b, 'w', now)
  while b.W == '' do
    local r = head(b, 'r', now)
    if r and (not w or tonumber(r.place) < tonumber(w.place)) then
      grant(b, r, 'r', now, t, channel)
    elseif w and b.C == 0 then
      grant(b, w, 'w', now, t, channel)
    else
      return
    end
  end
end
