-- First step of a key change across two Cluster slots: PK.PREPARE of the
-- new key that also returns the record it replaces, so that unreserve.lua
-- can put it back if the key change is undone.
-- KEYS[1]: the new key. ARGV: value, expiry mode ('n' forever, 'a' after ms,
-- 't' at ms), ms, retention ms.
-- Returns 0 when a live record holds the key; {1} when it had no record;
-- {1, value, ttlAt} when it replaced an expired, retained record.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- HMGET gives false, never nil, for a missing key or field; a hash that
-- lacks either field is no record.
local prev = redis.call('HMGET', KEYS[1], 'v', 't')
local reply = {1}
if prev[1] ~= false and prev[2] ~= false then
  local t = tonumber(prev[2])
  if t == 0 or now < t then
    return 0
  end
  reply = {1, prev[1], prev[2]}
end

-- ts is the stored form: an absolute time is kept as given, so no precision
-- is lost past 2^53.
local ttlAt, ts = 0, '0'
if ARGV[2] == 'a' then
  ttlAt = now + tonumber(ARGV[3])
  ts = string.format('%.0f', ttlAt)
elseif ARGV[2] == 't' then
  ttlAt, ts = tonumber(ARGV[3]), ARGV[3]
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', ts)
local at = ttlAt + tonumber(ARGV[4])
if ttlAt == 0 or at > 9007199254740991 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', at))
end
return reply
