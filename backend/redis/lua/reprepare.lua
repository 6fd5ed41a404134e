-- PK.REPREPARE (same key): replace the value of the live record of KEYS[1].
-- ARGV: value, '1' when IFEQ is given else '0', the IFEQ value, expiry mode
-- ('n' forever, 'a' after ms, 't' at ms, 'k' keep), ms, retention ms.
-- Returns 1 replaced, 0 no live record or another value.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- HMGET gives false, never nil, for a missing key or field.
local r = redis.call('HMGET', KEYS[1], 'v', 't')
if r[1] == false or r[2] == false then
  return 0
end
local t = tonumber(r[2])
if t ~= 0 and now >= t then
  return 0
end
if ARGV[2] == '1' and r[1] ~= ARGV[3] then
  return 0
end

-- ts is the stored form: an absolute time is kept as given, so no precision
-- is lost past 2^53.
local ttlAt, ts = 0, '0'
if ARGV[4] == 'a' then
  ttlAt = now + tonumber(ARGV[5])
  ts = string.format('%.0f', ttlAt)
elseif ARGV[4] == 't' then
  ttlAt, ts = tonumber(ARGV[5]), ARGV[5]
elseif ARGV[4] == 'k' then
  ttlAt, ts = t, r[2]
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', ts)
local at = ttlAt + tonumber(ARGV[6])
if ttlAt == 0 or at > 9007199254740991 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', at))
end
return 1
