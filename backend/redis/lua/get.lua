-- PK.GET / PK.GETVALUE: the record of KEYS[1], live or expired but retained.
-- ARGV: retention ms. Returns false (nil) when there is none, else
-- {value, ttlAt as stored ("0" is forever), 1 live / 0 expired}.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- HMGET gives false, never nil, for a missing key or field.
local r = redis.call('HMGET', KEYS[1], 'v', 't')
if r[1] == false or r[2] == false then
  return false
end
local t = tonumber(r[2])
if t == 0 then
  return {r[1], r[2], 1}
end
if now >= t + tonumber(ARGV[1]) then
  -- Past its retention: Redis is about to delete it; it is not evidence.
  return false
end
if now < t then
  return {r[1], r[2], 1}
end
return {r[1], r[2], 0}
