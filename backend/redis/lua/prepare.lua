-- PK.PREPARE: reserve KEYS[1] for ARGV[1] unless a live record holds it.
-- ARGV: value, expiry mode ('n' forever, 'a' after ms, 't' at ms), ms,
-- retention ms. Returns 1 reserved, 0 held by a live record.
--
-- A record is a hash {v = value, t = ttlAt ms or "0" for forever}. "now" is
-- the server's clock, so every sidecar judges expiry alike.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- HMGET gives false, never nil, for a missing key or field; a hash that
-- lacks either field is no record.
local r = redis.call('HMGET', KEYS[1], 'v', 't')
if r[1] ~= false and r[2] ~= false then
  local t = tonumber(r[2])
  if t == 0 or now < t then
    return 0
  end
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
-- Redis deletes the record by itself once it has been expired for the
-- retention; a forever record (or one past 2^53 ms) never expires.
local at = ttlAt + tonumber(ARGV[4])
if ttlAt == 0 or at > 9007199254740991 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', at))
end
return 1
