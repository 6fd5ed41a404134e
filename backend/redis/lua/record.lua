-- record.lua comes first in reserve.lua and unreserve.lua (scripts.go joins
-- them when the scripts are loaded), the two steps of a key change or an
-- MPREPARE across Cluster slots, which are rare: so the record rules are
-- functions here. block.lua, which runs every other operation, has them
-- inline and defines no functions. A record is a string: ttlAt in
-- milliseconds in decimal ("0" forever), ':', then the value (docs/redis.md,
-- Key layout); one written before that layout is a hash {v, t}.

-- maxValue is --max-value-bytes, written here by the store (scripts.go):
-- reserve.lua refuses to hand back a replaced record with a longer value
-- (or a ttlAt text longer than 20 bytes), which only another writer stores.
-- load never reads such a value whole (block.lua says why): it gives big,
-- which no value equals.
local maxValue = 65536
local big = {}

-- size is the size of the record at key (value and ttlAt), for TOOLARGE.
local function size(key)
  local n = redis.pcall('STRLEN', key)
  if type(n) ~= 'number' then
    return redis.call('HSTRLEN', key, 'v') + redis.call('HSTRLEN', key, 't')
  end
  return n - 1
end

-- clock is the Redis server's time in milliseconds, so that every sidecar
-- judges expiry alike, whatever the pods' clocks say.
local function clock()
  local tm = redis.call('TIME')
  return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end

-- load returns the value, ttlAt and stored ttlAt of the record at key, or
-- nil. GET of a hash (a record of the former layout) answers WRONGTYPE:
-- then HMGET, which raises WRONGTYPE itself on a key of another type. GET
-- and HMGET give false, never nil, for a missing key or field; a string
-- not of the form, or a hash lacking a field, is no record.
local function load(key)
  local s = redis.pcall('GETRANGE', key, 0, string.format('%.0f', maxValue + 21))
  if type(s) == 'string' then
    local i = string.find(s, ':', 1, true)
    local t = i and tonumber(string.sub(s, 1, i - 1))
    if not t then
      return nil
    end
    if #s >= maxValue + 22 then
      return big, t, string.sub(s, 1, i - 1)
    end
    return string.sub(s, i + 1), t, string.sub(s, 1, i - 1)
  end
  local r
  if redis.call('HSTRLEN', key, 'v') > maxValue then
    r = redis.call('HMGET', key, 't', 't')
    r[1] = big
  else
    r = redis.call('HMGET', key, 'v', 't')
  end
  if r[1] == false or r[2] == false or not tonumber(r[2]) then
    return nil
  end
  return r[1], tonumber(r[2]), r[2]
end

-- live: forever, or not yet expired.
local function live(t, now)
  return t == 0 or now < t
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
  return 0, '0'
end

-- save writes the record, over whatever the key held. Redis deletes it by
-- itself once it has been expired for the retention (PX from now); a
-- forever record (or one past 2^53 ms) never expires; one already past its
-- retention is deleted at once.
local function save(key, value, ttlAt, ts, retention, now)
  local at = ttlAt + retention
  if ttlAt == 0 or at > 9007199254740991 then
    redis.call('SET', key, ts .. ':' .. value)
  elseif at > now then
    redis.call('SET', key, ts .. ':' .. value, 'PX', string.format('%.0f', at - now))
  else
    redis.call('DEL', key)
  end
end
