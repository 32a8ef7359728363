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
-- The books, in one field B ("C,W,E,L,P,F,R,X,S,Hs,Ts,Hr,Tr,Hw,Tw"):
--   C  holders, grants included        W  the writer's token ('' when none)
--   E  a lower bound of the holders' expiries ('' when no holder)
--   L  a holder to name to a refused caller   P  the last grant not yet taken
--   F, R  f and r as these scripts last wrote them: a client of the first
--         layout writes f and r but not the books, so a difference means
--         the books are stale and are made again from the holders
--   X  the latest expiry these scripts asked the hash to live until (ms):
--      an entry that expires later raises the hash's expiry if PTTL says
--      it must (renewals raise it too), never lowers it
--   S  the last place given: places order readers and writers across their
--      two lists (first come, first served)
--   H<l>, T<l>  first and last sequence numbers of wait list l ('' when empty)
-- A step first checks F = f, R = r and E > now; otherwise (rarely: a
-- holder expired, or a first-layout client acted) it reads the holders once
-- (rescan), dropping the expired ones. A holder that crashed frees its
-- permit at its expiry that way.
--
-- The wait queue: one entry per waiting process and side, not per caller
-- (callers of one Client wait in its local queue, whose head alone talks to
-- Redis). Three lists, each a run of sequence numbers: s (waiters for a
-- permit), r (readers), w (writers):
--   Q<l><seq>  "<queue id>:<place>:<expiry ms>:<grant TTL ms>:<limit>:<owner id>"
--   I<id>      "<l><seq>", where queue id's entry is
--   A<id>      the place of a grant to reader queue id, until taken
-- An entry not refreshed by its head's attempt within its lifetime belongs
-- to a dead process: skipped and dropped when met at the head of its list.
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
-- Cost: what a Redis call costs dominates a script (acquire.lua's header),
-- so a step reads the fields it needs in one HMGET, keeps what it changes
-- in a buffer and writes it with one HDEL and one HSET at the end (flush):
-- about six calls for a release that grants, as many for the attempt that
-- takes the grant. Each queue entry is written, read at the head of its
-- list and dropped once, so a release is O(1) in the number of waiters
-- (amortised over the dead entries it drops); a rescan reads the holders
-- and the entries (one per waiting process and side), at most once per
-- expiry of the earliest holder.
local K = KEYS[1]
local granted = {} -- the queue ids this step granted to (grant)
local cache, dirty = {}, {} -- field → value (false: absent); the fields written
local book = {'C', 'W', 'E', 'L', 'P', 'F', 'R', 'X', 'S', 'Hs', 'Ts', 'Hr', 'Tr', 'Hw', 'Tw'}
local numeric = {C = true, E = true, X = true, S = true, Hs = true, Ts = true, Hr = true, Tr = true, Hw = true, Tw = true}

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- fetch returns the fields' values (nil when absent), as the buffer has
-- them, reading those it does not have in one call.
local function fetch(...)
  local names, miss = {...}, {}
  for _, f in ipairs(names) do
    if cache[f] == nil then miss[#miss + 1] = f end
  end
  if #miss > 0 then
    local v = redis.call('HMGET', K, unpack(miss))
    for i, f in ipairs(miss) do cache[f] = v[i] end
  end
  local out = {}
  for i, f in ipairs(names) do
    out[i] = cache[f] or nil
  end
  return unpack(out, 1, #names)
end

local function put(f, v) cache[f], dirty[f] = v, true end
local function drop(f) cache[f], dirty[f] = false, true end

-- flush writes the buffer: one HDEL, one HSET.
local function flush()
  local set, del = {}, {}
  for f in pairs(dirty) do
    local v = cache[f]
    if v then
      set[#set + 1] = f
      set[#set + 1] = v
    else
      del[#del + 1] = f
    end
  end
  dirty = {}
  if #del > 0 then redis.call('HDEL', K, unpack(del)) end
  if #set > 0 then redis.call('HSET', K, unpack(set)) end
end

-- keep: the hash lives at least until exp (see finish).
local function keep(b, exp)
  if not b.X or exp > b.X then b.X, b.expire = exp, true end
end

-- rescan makes the books b again from the holders, dropping the expired.
local function rescan(now, b)
  flush()
  local all = redis.call('HGETALL', K)
  local c, w, e, live, any = 0, '', nil, {}, ''
  for i = 1, #all, 2 do
    local k = all[i]
    cache[k] = all[i + 1]
    if string.byte(k, 1) == 112 then -- 'p'
      local exp, m = string.match(all[i + 1], '^(%d+):%d+:(%a)$')
      local tok = string.sub(k, 2)
      exp = tonumber(exp)
      if exp < now then
        drop(k)
        drop('d' .. tok)
        drop('A' .. tok)
      else
        c = c + 1
        live[tok] = true
        any = tok
        if m == 'w' then w = tok end
        if not e or exp < e then e = exp end
      end
    end
  end
  b.C, b.W, b.E = c, w, e
  if not live[b.L] then b.L = any end
  if not live[b.P] then b.P = '' end
  b.F, b.R = b.f, b.r
  b.X = nil -- an older client may have set the expiry: set it again when needed
end

-- books reads the books, made again when stale (rescan: then rescanned),
-- with the fields given (read in the same call).
local function books(now, ...)
  local raw, f, r = fetch('B', 'f', 'r', ...)
  local b, i = {f = f, r = r, raw = raw}, 1
  for v in string.gmatch((raw or '') .. ',', '([^,]*),') do
    local k = book[i]
    if not k then break end
    if numeric[k] then b[k] = tonumber(v) elseif v ~= '' then b[k] = v end
    i = i + 1
  end
  b.C, b.W, b.L, b.P = b.C or 0, b.W or '', b.L or '', b.P or ''
  if b.F ~= b.f or b.R ~= b.r or (b.E and b.E < now) then
    rescan(now, b)
    return b, true
  end
  return b, false
end

-- finish writes the books and the buffer, and raises the hash's expiry
-- if an entry written outlives it (after the writes: PEXPIRE on a hash not
-- written yet does nothing).
local function finish(b, now)
  b.F, b.R = b.f, b.r
  local v = {}
  for i, k in ipairs(book) do
    v[i] = b[k] or ''
  end
  local packed = table.concat(v, ',')
  if packed ~= b.raw then put('B', packed) end
  flush()
  if b.expire and redis.call('PTTL', K) < b.X - now then
    redis.call('PEXPIRE', K, math.max(b.X - now, 1))
  end
end

-- head returns the first live entry of list l, dropping the dead entries
-- and gaps (entries that left from the middle) before it; nil when empty.
local function head(b, l, now)
  local s, t = b['H' .. l], b['T' .. l]
  while s and s <= t do
    local q = 'Q' .. l .. s
    local v = fetch(q)
    if v then
      local id, place, exp, gttl, limit, owner = string.match(v, '^([^:]*):(%d+):(%d+):(%d+):(%d+):(.*)$')
      if tonumber(exp) >= now then
        b['H' .. l] = s
        return {id = id, l = l, seq = s, place = tonumber(place), gttl = tonumber(gttl), limit = tonumber(limit), owner = owner}
      end
      drop('I' .. id)
    end
    drop(q)
    s = s + 1
  end
  b['H' .. l], b['T' .. l] = nil, nil
  return nil
end

-- unlink removes the entry of queue id at (list l, seq) from its list; the
-- bounds follow an entry leaving either end, and go with the only one.
local function unlink(b, id, l, seq)
  drop('I' .. id)
  drop('Q' .. l .. seq)
  local h, t = b['H' .. l], b['T' .. l]
  if h == seq and t == seq then
    b['H' .. l], b['T' .. l] = nil, nil
  elseif h == seq then
    b['H' .. l] = seq + 1
  elseif t == seq then
    b['T' .. l] = seq - 1
  end
end

-- leave removes queue id's entry, if it has one (then true).
local function leave(b, id)
  local at = fetch('I' .. id)
  if at then
    unlink(b, id, string.sub(at, 1, 1), tonumber(string.sub(at, 2)))
    return true
  end
  return false
end

-- grant gives entry e (head) a permit or side (mode) as a holder under its
-- queue id, for its grant TTL, and announces it to that queue.
local function grant(b, e, mode, now, t, channel)
  unlink(b, e.id, e.l, e.seq)
  local fence = next_fence(b.f, t) -- nextfence.lua, prepended
  local exp = now + e.gttl
  put('p' .. e.id, exp .. ':' .. fence .. ':' .. mode)
  put('d' .. e.id, e.owner .. '\n')
  put('f', fence)
  if mode == 'r' then put('A' .. e.id, e.place) end
  b.f, b.C, b.L, b.P = fence, b.C + 1, e.id, e.id
  if mode == 'w' then b.W = e.id end
  if not b.E or exp < b.E then b.E = exp end
  keep(b, exp)
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
    while e and b.C < e.limit do
      grant(b, e, 's', now, t, channel)
      if b.C >= e.limit then return end
      e = head(b, 's', now)
    end
    return
  end
  local w = head(b, 'w', now)
  while b.W == '' do
    local r = head(b, 'r', now)
    if r and (not w or r.place < w.place) then
      grant(b, r, 'r', now, t, channel)
    elseif w and b.C == 0 then
      grant(b, w, 'w', now, t, channel)
    else
      return
    end
  end
end

-- name describes a holder of the books for a refused caller: its owner,
-- metadata and fence (fence 0 when it is gone).
local function name(tok)
  if tok == '' then return '', '', 0 end
  local p, d = fetch('p' .. tok, 'd' .. tok)
  if not p then return '', '', 0 end
  local owner, meta = string.match(d or '', '^([^\n]*)\n(.*)$')
  return owner or '', meta or '', tonumber(string.match(p, '^%d+:(%d+):'))
end
