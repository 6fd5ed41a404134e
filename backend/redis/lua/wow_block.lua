-- block.lua for layout=wow: the same operations, arguments and answers
-- (see block.lua), on Wow's records. It is a script of its own, so that
-- block.lua, which runs every command of the default layout, stays as it is.
--
-- A record is Wow's PrepareKey record: a hash {ttlAt, value}, ttlAt the Unix
-- time in milliseconds in decimal, forever written as 148204944000000
-- (6666-06-06T00:00:00Z) and any ttlAt at or above it read as forever
-- (answered as "0", block.lua's forever). A record is live while forever or
-- now < ttlAt, as in every layout.
--
-- Records written by others may be unusual (docs/redis.md, Wow layout):
--   * no ttlAt field: ttlAt 0, so expired (and past any retention), as Wow
--     counts it: a prepare takes the key over; reads see no record.
--   * a ttlAt that is not decimal digits: its life is unknown. It holds the
--     key (a prepare answers 0, a move 0), is never overwritten, is no live
--     record for a reprepare; a rollback without IFEQ deletes it.
--   * no value field: IFEQ never matches it; with a live ttlAt it holds the
--     key.
--   A get of a hash that holds one of the last two answers UNREADABLE (a
--   scan skips it) while it is not past its retention.
--
-- No record carries a Redis expiry. Wow's scripts write with HSET, which
-- keeps a key's expiry: a record the sidecar wrote with PEXPIREAT and Wow
-- then took over (after its ttlAt) would vanish at the sidecar's expiry
-- while Wow holds it. So an expired record stays until it is overwritten or
-- rolled back, as Wow's own do, and reads as no record from ttlAt +
-- retention on. Every write is HSET of both fields, then PERSIST (an expiry
-- someone else set goes); a record past its retention when written is
-- deleted instead.
--
-- The script defines no functions, as block.lua (closures cost per call).

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

local FOREVER = 148204944000000
-- maxValue is --max-value-bytes, written here by the store (scripts.go): a
-- get of a record whose value is longer, or whose ttlAt text is longer than
-- 20 bytes (a Wow service can write any size), answers 'TOOLARGE <bytes>'
-- instead of the record, which is never sent. A value is read only when
-- HSTRLEN says it is within maxValue (a 64 MiB one held Redis 2 s per read
-- into Lua); a longer one is big, a table no value equals (IFEQ).
local maxValue = 65536
local big = {}
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local retention = tonumber(ARGV[1])
local out = {}
k, a = 1, 2
while a <= n do
  local c = ARGV[a]
  local reply = 0
  -- The operation's width (nk keys, na arguments), and its write when it
  -- makes one: wn keys from KEYS[k] get ttlAt ts and the values from
  -- ARGV[wv] on; gone: the record would be past its retention already,
  -- so it is deleted instead.
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
  local wn, wv, wts, gone, keep = 0, 0, '148204944000000', false, false
  if am > 0 then
    local mode, ttlAt = ARGV[am], FOREVER
    if mode == 'a' then
      ttlAt = now + tonumber(ARGV[am + 1])
      wts = string.format('%.0f', ttlAt)
    elseif mode == 't' then
      -- An absolute time is stored as given: no precision lost past 2^53.
      ttlAt = tonumber(ARGV[am + 1])
      wts = ARGV[am + 1]
    elseif mode == 'k' then
      keep = true
    end
    gone = ttlAt < FOREVER and ttlAt + retention <= now
  end

  -- The reads: KEYS[j] from j = k on, until the last of the operation's
  -- keys, a record that holds its key, or an error (a move reads its old
  -- key only when the new one is free; an MPREPARE stops at its first held
  -- key). Each read leaves: found (the key is a hash), v the value (false:
  -- none), ts the stored ttlAt, t the ttlAt (nil: unknown), held (live or
  -- of unknown life), or the error r.
  local j, last = k, k + nk - 1
  local r, found, v, ts, t, held
  while true do
    r = redis.pcall('HSTRLEN', KEYS[j], 'value')
    if type(r) == 'number' and r > maxValue then
      r = redis.pcall('HMGET', KEYS[j], 'ttlAt', 'ttlAt')
      if not r.err then
        r[2] = big
      end
    elseif type(r) == 'number' then
      r = redis.pcall('HMGET', KEYS[j], 'ttlAt', 'value')
    end
    if r.err then
      break
    end
    ts, v = r[1], r[2]
    r = false
    found = ts ~= false or v ~= false
    t = 0
    if ts ~= false then
      t = string.match(ts, '^%d+$') and tonumber(ts) or nil
    end
    held = t == nil or t >= FOREVER or now < t
    if j == last or (found and held) then
      break
    end
    j = j + 1
  end
  -- kept: a record that reads as there (live or expired but retained, or
  -- of unknown life); readable: its value and ttlAt are known.
  local kept = found and (t == nil or t >= FOREVER or (t > 0 and now < t + retention))
  local readable = v ~= false and t ~= nil

  if r then
    reply = r
  elseif c == 'p' then
    if not (found and held) then
      reply, wn, wv = 1, 1, a + 1
    end
  elseif c == 'g' then
    reply = false
    if kept and not readable then
      reply = {err = 'UNREADABLE ' .. KEYS[k] .. ' is a hash without a readable record (' ..
        (v == false and 'no value' or 'ttlAt is not a number') .. ')'}
    elseif kept and (v == big or #v > maxValue or #ts > 20) then
      local n = redis.call('HSTRLEN', KEYS[k], 'value') + redis.call('HSTRLEN', KEYS[k], 'ttlAt')
      reply = {err = 'TOOLARGE ' .. string.format('%.0f', n)}
    elseif kept then
      reply = {v, t >= FOREVER and '0' or ts, (t >= FOREVER or now < t) and 1 or 0}
    end
  elseif c == 'r' then
    if kept and (ARGV[a + 1] ~= '1' or v == ARGV[a + 2]) then
      redis.call('DEL', KEYS[k])
      reply = 1
    end
  elseif c == 'u' then
    if found and t ~= nil and held and (ARGV[a + 2] ~= '1' or v == ARGV[a + 3]) then
      reply, wn, wv = 1, 1, a + 1
      if keep then
        wts, gone = ts, false
      end
    end
  elseif c == 'm' then
    -- The reads stopped at the new key only when it is held.
    if j == k then
      reply = 0
    elseif kept and v == ARGV[a + 2] then
      reply, wn, wv = 1, 1, a + 1
    else
      reply = 2
    end
  else -- 'M': every key free, or nothing changes
    if found and held then
      reply = 0
    else
      reply, wn, wv = 1, nk, a + 4
    end
  end

  -- The write: HSET of both fields (over whatever hash the key held), then
  -- PERSIST; or DEL when the record is past its retention already.
  for i = 0, wn - 1 do
    local w
    if gone then
      w = redis.call('DEL', KEYS[k + i])
    else
      w = redis.pcall('HSET', KEYS[k + i], 'ttlAt', wts, 'value', ARGV[wv + i])
      if not (type(w) == 'table' and w.err) then
        redis.call('PERSIST', KEYS[k + i])
      end
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
