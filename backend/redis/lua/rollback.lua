-- PK.ROLLBACK: delete the record of KEYS[1], live or expired but retained.
-- ARGV: '1' when IFEQ is given else '0', the IFEQ value, retention ms.
-- Returns 1 deleted, 0 no record or another value.
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)

-- HMGET gives false, never nil, for a missing key or field.
local r = redis.call('HMGET', KEYS[1], 'v', 't')
if r[1] == false or r[2] == false then
  return 0
end
local t = tonumber(r[2])
if t ~= 0 and now >= t + tonumber(ARGV[3]) then
  return 0
end
if ARGV[1] == '1' and r[1] ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
