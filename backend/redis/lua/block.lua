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
--         {value, ttlAt as stored ("0" forever), 1 live / 0 expired}, or
--         the error 'TOOLARGE <bytes>' for a record whose value is longer
--         than maxValue or whose ttlAt text is longer than 20 bytes (only
--         another writer stores such a record; it is never sent)
--   r:    1 deleted, 0 no record or another value
--   u:    1 replaced, 0 no live record or another value
--   m:    1 moved, 0 a live record holds the new key, 2 the old key has no
--         record or another value; only 1 changes anything
-- or that operation's error (WRONGTYPE: someone wrote another type at our
-- key; OOM at the script's first write): the operations before it have
-- run and written, so the script goes on and their answers are returned.
--
-- A record is a Redis string: its ttlAt in milliseconds in decimal ("0"
-- forever), ':', then the value's bytes (anything, ':' included: the first
-- ':' ends the ttlAt). A string not of that form is no record. A record is
-- live while its ttlAt is 0 or now < ttlAt, and kept as evidence until
-- ttlAt + retention, when Redis deletes it by itself (the key's expiry,
-- set with the SET that writes it). So a prepare of a free key is one
-- Redis call, SET NX PX; only a key that exists is read (GET) and, when
-- it may be taken, overwritten (SET, which also drops an old expiry).
--
-- Records written before this layout are hashes {v = value, t = ttlAt}
-- (a hash lacking v or t is no record). GET of a hash answers WRONGTYPE:
-- only then the key is read with HMGET, and a write replaces the hash with
-- the string. A key of another type (someone else's data) answers
-- WRONGTYPE to HMGET as well: that is the operation's error. GET gives
-- false, never nil, for a missing key, and so does HMGET for a field.
--
-- The script defines no functions: Redis runs the whole source on every
-- EVALSHA, and each definition is a closure made again per call (ten
-- cost 0.65 us per call, docs/redis.md). The rules are still written once:
-- every read of a record is the one read loop below, each operation
-- decides in its branch, and every write goes through the one tail of the
-- loop. Times are Lua numbers, exact below 2^53 (ttlAt is below 2^53 for
-- every time up to the year 285,000; EX/PX are capped at 2^52 ms by the
-- caller), and are written with string.format('%.0f'): Redis turns a Lua
-- number given to a command into text its own way (%.17g up to 7.0, a
-- shortest form since), and PX needs an integer.

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

-- maxValue is --max-value-bytes: the largest value a get returns. The
-- store writes the configured number here when it loads the script
-- (scripts.go), so the bound costs no argument per call. A record is read
-- with GETRANGE up to readEnd, the longest record of such a value (a ttlAt
-- of 20 digits, ':'), and a byte more: a string longer than that is
-- never read whole (a 64 MiB value held Redis 2 s per GET into Lua, and
-- the sidecar then had to take it), and its value is big, a table no
-- value equals (IFEQ), which a get answers TOOLARGE with the record's
-- size. A hash of before is read whole only when HSTRLEN of its v is
-- within maxValue.
local maxValue = 65536
local readEnd = string.format('%.0f', maxValue + 21)
local big = {}

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
  -- The operation's width (nk keys, na arguments), and its write when it
  -- makes one: wn keys from KEYS[k] get pre .. the values from ARGV[wv]
  -- on, with the Redis expiry px ms from now (nil: none; 0 or less: the
  -- record is past its retention already, so it is deleted), or the key's
  -- own expiry (keep).
  local nk, na, am = 1, 1, 0
  if c == 'p' then
    na, am = 4, a + 2
  elseif c == 'r' then
    na = 3
  elseif c == 'u' then
    na, am = 6, a + 4
  elseif c == 'm' then
    nk, na, am = 2, 5, a + 3
  elseif c == 'M' then
    nk = tonumber(ARGV[a + 1])
    na, am = 4 + nk, a + 2
  end
  local wn, wv, pre, px, keep = 0, 0, '0:', nil, false
  if am > 0 then
    local mode, ttlAt = ARGV[am], 0
    if mode == 'a' then
      ttlAt = now + tonumber(ARGV[am + 1])
      pre = string.format('%.0f:', ttlAt)
    elseif mode == 't' then
      -- An absolute time is stored as given: no precision lost past 2^53.
      ttlAt = tonumber(ARGV[am + 1])
      pre = ARGV[am + 1] .. ':'
    elseif mode == 'k' then
      keep = true
    end
    if ttlAt ~= 0 and ttlAt + retention <= 9007199254740991 then
      px = ttlAt + retention - now
    end
  end

  -- A prepare first tries the free key: SET NX, one call. A key that
  -- exists (a record, live or not, a hash of before, anything) is left
  -- alone by NX and read below.
  local done = false
  if c == 'p' and (px == nil or px > 0) then
    local w
    if px then
      w = redis.pcall('SET', KEYS[k], pre .. ARGV[a + 1], 'NX', 'PX', string.format('%.0f', px))
    else
      w = redis.pcall('SET', KEYS[k], pre .. ARGV[a + 1], 'NX')
    end
    if w then
      -- OK, or the refusal of a first write (OOM): the answer either way.
      done, reply = true, w.err and w or 1
    end
  end

  -- The reads: KEYS[j] from j = k on, until the last of the operation's
  -- keys, a live record, or an error (a move reads its old key only when
  -- the new one is free; an MPREPARE stops at its first live key). Each
  -- read leaves the record's value v, stored ttlAt ts and ttlAt t (false
  -- or nil: no record), or the error r. redis.pcall: a read that fails
  -- (WRONGTYPE) is this operation's answer.
  local j, last = k, k + nk - 1
  local r, v, ts, t
  while not done do
    v, ts, t = false, false, false
    -- A missing key is '' (no ':'), as a string not of the form.
    r = redis.pcall('GETRANGE', KEYS[j], 0, readEnd)
    if type(r) == 'string' then
      local i = string.find(r, ':', 1, true)
      if i then
        ts = string.sub(r, 1, i - 1)
        t, v = tonumber(ts), string.sub(r, i + 1)
        if #r >= maxValue + 22 then
          v = big
        end
      end
      r = false
    else
      r = redis.pcall('HSTRLEN', KEYS[j], 'v')
      if type(r) == 'number' and r > maxValue then
        r = redis.pcall('HMGET', KEYS[j], 't', 't')
        r[1] = big
      elseif type(r) == 'number' then
        r = redis.pcall('HMGET', KEYS[j], 'v', 't')
      end
      if not r.err then
        v, ts = r[1], r[2]
        t = v and ts and tonumber(ts)
        r = false
      end
    end
    if r or j == last or (t and (t == 0 or now < t)) then
      break
    end
    j = j + 1
  end

  if done then
  elseif r then
    reply = r
  elseif c == 'p' then
    if not (t and (t == 0 or now < t)) then
      reply, wn, wv = 1, 1, a + 1
    end
  elseif c == 'g' then
    reply = false
    if t and (t == 0 or now < t + retention) then
      if v == big or #v > maxValue or #ts > 20 then
        -- The record's size: STRLEN less the ':', or a hash's two fields.
        local n = redis.pcall('STRLEN', KEYS[k])
        if type(n) ~= 'number' then
          n = redis.call('HSTRLEN', KEYS[k], 'v') + redis.call('HSTRLEN', KEYS[k], 't') + 1
        end
        reply = {err = 'TOOLARGE ' .. string.format('%.0f', n - 1)}
      else
        reply = {v, ts, (t == 0 or now < t) and 1 or 0}
      end
    end
  elseif c == 'r' then
    if t and (t == 0 or now < t + retention) and (ARGV[a + 1] ~= '1' or v == ARGV[a + 2]) then
      redis.call('DEL', KEYS[k])
      reply = 1
    end
  elseif c == 'u' then
    if t and (t == 0 or now < t) and (ARGV[a + 2] ~= '1' or v == ARGV[a + 3]) then
      reply, wn, wv = 1, 1, a + 1
      if keep then
        pre = ts .. ':'
      end
    end
  elseif c == 'm' then
    -- The reads stopped at the new key only when it is live.
    if j == k then
      reply = 0
    elseif t and v == ARGV[a + 2] and (t == 0 or now < t + retention) then
      reply, wn, wv = 1, 1, a + 1
    else
      reply = 2
    end
  else -- 'M': every key free, or nothing changes
    if t and (t == 0 or now < t) then
      reply = 0
    else
      reply, wn, wv = 1, nk, a + 4
    end
  end

  -- The write: SET, which replaces whatever the key held (a record, a
  -- hash of before) and its expiry, with PX ttlAt + retention - now, none
  -- for a forever record (or one past 2^53 ms), or the key's own with
  -- KEEPTTL (the ttlAt is kept, so is the expiry written with it).
  for i = 0, wn - 1 do
    local w
    if keep then
      w = redis.pcall('SET', KEYS[k + i], pre .. ARGV[wv + i], 'KEEPTTL')
    elseif px == nil then
      w = redis.pcall('SET', KEYS[k + i], pre .. ARGV[wv + i])
    elseif px > 0 then
      w = redis.pcall('SET', KEYS[k + i], pre .. ARGV[wv + i], 'PX', string.format('%.0f', px))
    else
      -- Past its retention at once (an absolute time long gone): what
      -- PEXPIREAT in the past did, Redis deleting the key.
      w = redis.call('DEL', KEYS[k + i])
    end
    -- OOM can only refuse a script's first write, before anything of the
    -- block is written.
    if type(w) == 'table' and w.err then
      reply = w
      break
    end
  end
  -- A move deletes its old key once the new one is written, so that a
  -- refused write leaves both as they were.
  if c == 'm' and reply == 1 then
    redis.call('DEL', KEYS[k + 1])
  end
  out[#out + 1] = reply
  k, a = k + nk, a + na
end
return out
