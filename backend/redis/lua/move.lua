-- PK.REPREPARE … FROM … in one step: reserve KEYS[1] (new) for ARGV[1] and
-- release KEYS[2] (old) if its value is ARGV[2], live or expired but
-- retained. Both keys must be in one slot. ARGV: new value, old value,
-- expiry mode ('n' forever, 'a' after ms, 't' at ms), ms, retention ms.
-- Returns 1 moved, 0 a live record holds the new key, 2 the old key has no
-- record or another value; only 1 changes anything.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local retention = tonumber(ARGV[5])

-- HMGET gives false, never nil, for a missing key or field; a hash that
-- lacks either field is no record.
local new = redis.call('HMGET', KEYS[1], 'v', 't')
if new[1] ~= false and new[2] ~= false then
  local t = tonumber(new[2])
  if t == 0 or now < t then
    return 0
  end
end

local old = redis.call('HMGET', KEYS[2], 'v', 't')
if old[1] == false or old[2] == false or old[1] ~= ARGV[2] then
  return 2
end
local oldT = tonumber(old[2])
if oldT ~= 0 and now >= oldT + retention then
  return 2
end

-- ts is the stored form: an absolute time is kept as given, so no precision
-- is lost past 2^53.
local ttlAt, ts = 0, '0'
if ARGV[3] == 'a' then
  ttlAt = now + tonumber(ARGV[4])
  ts = string.format('%.0f', ttlAt)
elseif ARGV[3] == 't' then
  ttlAt, ts = tonumber(ARGV[4]), ARGV[4]
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', ts)
local at = ttlAt + retention
if ttlAt == 0 or at > 9007199254740991 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', at))
end
return 1
