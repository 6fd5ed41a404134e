-- Compensation of a key change across two Cluster slots: when the new key
-- still holds the value reserve.lua gave it, put back the record it replaced
-- (or delete it when there was none). Another value means another client
-- owns the key now: it is left alone.
-- KEYS[1]: the new key. ARGV: the reserved value, '1' when a record was
-- replaced else '0', its value, its ttlAt, retention ms.
-- Returns 1 undone, 0 left alone.

-- HGET of a missing key or field is false, never nil.
local v = redis.call('HGET', KEYS[1], 'v')
if v == false or v ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '1' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 't', ARGV[4])
-- The replaced record was expired: it keeps the expiry it had, which
-- deletes it at once if its retention has run out meanwhile.
local ttlAt = tonumber(ARGV[4])
local at = ttlAt + tonumber(ARGV[5])
if ttlAt == 0 or at > 9007199254740991 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', at))
end
return 1
