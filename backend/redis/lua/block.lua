-- Every PK operation runs in this script: a list of operations run as one
-- script, so as one isolated unit: no other command runs on the server
-- between them, and each sees the writes of those before it. A single
-- command is a list of one; the sidecar sends each batch of pipelined
-- commands as one list (split at maxBlockOps, see batch.go), a transaction
-- (EXEC) and a PK.MPREPARE as one.
--
-- KEYS: the keys of the operations, in order (one each, two for a move:
-- new then old, n for PK.MPREPARE). ARGV[1]: retention ms; then each
-- operation as an opcode and its arguments:
--   'p' value mode ms               PK.PREPARE
--   'g'                             PK.GET / PK.GETVALUE
--   'r' ifeq want                   PK.ROLLBACK
--   'u' value ifeq want mode ms     PK.REPREPARE (same key)
--   'm' newValue oldValue mode ms   PK.REPREPARE … FROM …
--   'M' n mode ms value1 … valueN   PK.MPREPARE (n keys), all or none
-- ifeq is '1' when IFEQ is given (want is the value), else '0'. mode is
-- 'n' forever, 'a' ms after now, 't' at ms, 'k' keep the ttlAt (u only).
-- Returns an array with each operation's answer:
--   p, M: 1 reserved, 0 a live record holds the key (one of them: nothing
--         changed)
--   g:    nil (no record, or expired past the retention), else
--         {value, ttlAt as stored ("0" forever), 1 live / 0 expired}
--   r:    1 deleted, 0 no record or another value
--   u:    1 replaced, 0 no live record or another value
--   m:    1 moved, 0 a live record holds the new key, 2 the old key has no
--         record or another value; only 1 changes anything
-- or that operation's error (WRONGTYPE: someone wrote another type at our
-- key; OOM at the script's first write): the operations before it have
-- run and written, so the script goes on and their answers are returned.
--
-- A record is a hash {v = value, t = ttlAt in milliseconds, "0" forever};
-- a hash lacking either field is no record. HMGET gives false, never nil,
-- for a missing key or field. A record is live while t is 0 or now < t,
-- and kept as evidence until t + retention, when Redis deletes it by
-- itself (PEXPIREAT).
--
-- The script defines no functions: Redis runs the whole source on every
-- EVALSHA, and each definition is a closure made again per call (ten
-- cost 0.65 us per call, docs/redis.md). The rules are still written once:
-- each operation decides here, and every write goes through the one tail
-- of the loop below (HSET, then PEXPIREAT or PERSIST). Numbers stay Lua
-- numbers: Redis passes a number to a command as "%.17g", the exact
-- integer below 2^53 (ttlAt is below 2^53 for every time up to the year
-- 285,000; EX/PX are capped at 2^52 ms by the caller).

-- The list is checked whole before anything runs: a malformed one changes
-- nothing.
local n = #ARGV
local k, a = 1, 2
while a <= n do
  local c = ARGV[a]
  if c == 'p' then
    k, a = k + 1, a + 4
  elseif c == 'g' then
    k, a = k + 1, a + 1
  elseif c == 'r' then
    k, a = k + 1, a + 3
  elseif c == 'u' then
    k, a = k + 1, a + 6
  elseif c == 'm' then
    k, a = k + 2, a + 5
  elseif c == 'M' and tonumber(ARGV[a + 1]) and tonumber(ARGV[a + 1]) >= 1 then
    local m = tonumber(ARGV[a + 1])
    k, a = k + m, a + 4 + m
  else
    return redis.error_reply('ERR prepkey block: unknown operation ' .. tostring(c))
  end
end
if a ~= n + 1 or k ~= #KEYS + 1 then
  return redis.error_reply('ERR prepkey block: arguments do not match the operations')
end

-- One clock for the whole list: the block happens at one instant, and
-- every sidecar judges expiry on the Redis server's clock.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local retention = tonumber(ARGV[1])
local out = {}
k, a = 1, 2
while a <= n do
  local c = ARGV[a]
  local reply = 0
  -- The operation's width, and its write when it makes one: wn keys from
  -- KEYS[k] get the values from ARGV[wv] on, with the expiry at ARGV[am]
  -- (mode, ms).
  local nk, na = 1, 1
  local wn, wv, am = 0, 0, 0
  local keepT, keepTs
  -- The first read of the operation's key. redis.pcall: a read that fails
  -- (WRONGTYPE) is this operation's answer. A prepare needs only t (HGET;
  -- HEXISTS v only when t is live, which is rare), the others v and t.
  local r, t
  if c == 'p' then
    r = redis.pcall('HGET', KEYS[k], 't')
    t = type(r) == 'string' and tonumber(r)
  else
    r = redis.pcall('HMGET', KEYS[k], 'v', 't')
    t = r.err == nil and r[1] and r[2] and tonumber(r[2])
  end
  if type(r) == 'table' and r.err then
    reply = r
    if c == 'm' then
      nk, na = 2, 5
    elseif c == 'M' then
      nk = tonumber(ARGV[a + 1])
      na = 4 + nk
    else
      na = ({p = 4, g = 1, r = 3, u = 6})[c]
    end
  elseif c == 'p' then
    na = 4
    if not (t and (t == 0 or now < t) and redis.call('HEXISTS', KEYS[k], 'v') == 1) then
      reply, wn, wv, am = 1, 1, a + 1, a + 2
    end
  elseif c == 'g' then
    reply = false
    if t and (t == 0 or now < t + retention) then
      reply = {r[1], r[2], (t == 0 or now < t) and 1 or 0}
    end
  elseif c == 'r' then
    na = 3
    if t and (t == 0 or now < t + retention) and (ARGV[a + 1] ~= '1' or r[1] == ARGV[a + 2]) then
      redis.call('DEL', KEYS[k])
      reply = 1
    end
  elseif c == 'u' then
    na = 6
    if t and (t == 0 or now < t) and (ARGV[a + 2] ~= '1' or r[1] == ARGV[a + 3]) then
      reply, wn, wv, am = 1, 1, a + 1, a + 4
      keepT, keepTs = t, r[2]
    end
  elseif c == 'm' then
    nk, na = 2, 5
    if not (t and (t == 0 or now < t)) then
      local o = redis.pcall('HMGET', KEYS[k + 1], 'v', 't')
      local ot = o.err == nil and o[1] and o[2] and tonumber(o[2])
      if o.err then
        reply = o
      elseif ot and o[1] == ARGV[a + 2] and (ot == 0 or now < ot + retention) then
        redis.call('DEL', KEYS[k + 1])
        reply, wn, wv, am = 1, 1, a + 1, a + 3
      else
        reply = 2
      end
    end
  else -- 'M': every key free, or nothing changes
    nk = tonumber(ARGV[a + 1])
    na = 4 + nk
    reply = 1
    for i = 0, nk - 1 do
      if i > 0 then
        r = redis.pcall('HMGET', KEYS[k + i], 'v', 't')
        t = r.err == nil and r[1] and r[2] and tonumber(r[2])
      end
      if r.err then
        reply = r
        break
      end
      if t and (t == 0 or now < t) then
        reply = 0
        break
      end
    end
    if reply == 1 then
      wn, wv, am = nk, a + 4, a + 2
    end
  end
  -- The write: HSET, then the Redis expiry, ttlAt + retention, or none for
  -- a forever record (or one past 2^53 ms): PERSIST, unless HSET added
  -- both fields (the key held no record: it had no expiry of ours). An
  -- absolute time is stored as given, so no precision is lost past 2^53.
  if wn > 0 then
    local mode, ms = ARGV[am], ARGV[am + 1]
    local ttlAt, ts = 0, '0'
    if mode == 'a' then
      ttlAt = now + tonumber(ms)
      ts = ttlAt
    elseif mode == 't' then
      ttlAt, ts = tonumber(ms), ms
    elseif mode == 'k' then
      ttlAt, ts = keepT, keepTs
    end
    for i = 0, wn - 1 do
      -- OOM can only refuse a script's first write, before anything of
      -- the block is written.
      local w = redis.pcall('HSET', KEYS[k + i], 'v', ARGV[wv + i], 't', ts)
      if type(w) == 'table' then
        reply = w
        break
      end
      if ttlAt ~= 0 and ttlAt + retention <= 9007199254740991 then
        redis.call('PEXPIREAT', KEYS[k + i], ttlAt + retention)
      elseif w < 2 then
        redis.call('PERSIST', KEYS[k + i])
      end
    end
  end
  out[#out + 1] = reply
  k, a = k + nk, a + na
end
return out
