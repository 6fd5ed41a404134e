-- record.lua comes first in every script (scripts.go joins them when the
-- scripts are loaded), so that each EVALSHA script is whole and the rules
-- below are written once. A record is a hash {v = value, t = ttlAt in
-- milliseconds as stored, "0" for forever}.

-- clock is the Redis server's time in milliseconds, so that every sidecar
-- judges expiry alike, whatever the pods' clocks say.
local function clock()
  local tm = redis.call('TIME')
  return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
end

-- load returns the value, ttlAt and stored ttlAt of the record at key, or
-- nil. HMGET gives false, never nil, for a missing key or field; a hash
-- that lacks either field is no record.
local function load(key)
  local r = redis.call('HMGET', key, 'v', 't')
  if r[1] == false or r[2] == false then
    return nil
  end
  return r[1], tonumber(r[2]), r[2]
end

-- live: forever, or not yet expired.
local function live(t, now)
  return t == 0 or now < t
end

-- gone: expired for longer than the retention, so no longer evidence
-- (Redis is about to delete it).
local function gone(t, now, retention)
  return t ~= 0 and now >= t + retention
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

-- save writes the record. Redis deletes it by itself once it has been
-- expired for the retention; a forever record (or one past 2^53 ms) never
-- expires.
local function save(key, value, ttlAt, ts, retention)
  redis.call('HSET', key, 'v', value, 't', ts)
  local at = ttlAt + retention
  if ttlAt == 0 or at > 9007199254740991 then
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIREAT', key, string.format('%.0f', at))
  end
end

