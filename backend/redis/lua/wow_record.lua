-- wow_record.lua is record.lua for layout=wow: the record rules as
-- functions, put first in reserve.lua and unreserve.lua (the two steps of a
-- key change or an MPREPARE across Cluster slots). wow_block.lua, which runs
-- every other operation, has the same rules inline.
--
-- A record is Wow's: a hash {ttlAt = Unix ms in decimal, value}, forever
-- written as 148204944000000 (6666-06-06) and any ttlAt at or above it read
-- as forever. A hash with no ttlAt counts as ttlAt 0 (expired), as for Wow.
-- A ttlAt that is not decimal digits leaves the record's life unknown: it
-- counts as live, so it is never overwritten. No record carries a Redis
-- expiry: Wow's prepare writes with HSET, which keeps a key's expiry, so
-- an expiry the sidecar set would delete Wow's record taking the key over.

local FOREVER = 148204944000000

-- maxValue is --max-value-bytes, written here by the store (scripts.go):
-- reserve.lua refuses to hand back a replaced record with a longer value
-- (or a ttlAt text longer than 20 bytes), which only another writer stores.
-- load never reads such a value whole (wow_block.lua says why): it gives
-- big, which no value equals.
local maxValue = 65536
local big = {}

-- size is the size of the record at key (value and ttlAt), for TOOLARGE.
local function size(key)
  return redis.call('HSTRLEN', key, 'value') + redis.call('HSTRLEN', key, 'ttlAt')
end

-- clock is the Redis server's time in milliseconds, so that every sidecar
-- judges expiry alike, whatever the pods' clocks say.
local function clock()
  local tm = redis.call('TIME')
  return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end

-- load returns the value, ttlAt and stored ttlAt of the record at key, or
-- nil when there is nothing there that a later undo should put back.
-- HMGET raises WRONGTYPE on a key of another type. A record whose life is
-- unknown, or a live one without a value, comes back with value false and
-- a live ttlAt: it holds the key. An expired one without a value is
-- nothing to put back.
local function load(key)
  local r
  if redis.call('HSTRLEN', key, 'value') > maxValue then
    r = redis.call('HMGET', key, 'ttlAt', 'ttlAt')
    r[2] = big
  else
    r = redis.call('HMGET', key, 'ttlAt', 'value')
  end
  local ts, v = r[1], r[2]
  if ts == false and v == false then
    return nil
  end
  local t = 0
  if ts ~= false then
    t = string.match(ts, '^%d+$') and tonumber(ts) or nil
  end
  if t == nil then
    return false, FOREVER, ts
  end
  if v == false then
    if t >= FOREVER or clock() < t then
      return false, t, ts
    end
    return nil
  end
  return v, t, ts or '0'
end

-- live: forever, or not yet expired.
local function live(t, now)
  return t >= FOREVER or now < t
end

-- expiry resolves an expiry mode ('n' forever, 'a' after ms, 't' at ms) to
-- ttlAt and its stored form. An absolute time is kept as given, so no
-- precision is lost past 2^53.
local function expiry(mode, ms, now)
  if mode == 'a' then
    local ttlAt = now + tonumber(ms)
    return ttlAt, string.format('%.0f', ttlAt)
  elseif mode == 't' then
    return tonumber(ms), ms
  end
  return FOREVER, '148204944000000'
end

-- save writes the record over whatever hash the key held (HSET of both
-- fields; PERSIST drops an expiry someone else set). One already past its
-- retention is deleted instead: it would read as no record.
local function save(key, value, ttlAt, ts, retention, now)
  if ttlAt < FOREVER and ttlAt + retention <= now then
    redis.call('DEL', key)
    return
  end
  redis.call('HSET', key, 'ttlAt', ts, 'value', value)
  redis.call('PERSIST', key)
end
