
-- Compensation of a key change across two Cluster slots: when the new key
-- still holds the value reserve.lua gave it, put back the record it replaced
-- (or delete it when there was none). Another value means another client
-- owns the key now: it is left alone.
-- KEYS[1]: the new key. ARGV: the reserved value, '1' when a record was
-- replaced else '0', its value, its ttlAt, retention ms.
-- Returns 1 undone, 0 left alone.
local v = load(KEYS[1])
if v == nil or v ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '1' then
  redis.call('DEL', KEYS[1])
  return 1
end
-- The replaced record was expired: it keeps the expiry it had (its ttlAt
-- + retention), and is deleted at once if its retention has run out
-- meanwhile.
save(KEYS[1], ARGV[3], tonumber(ARGV[4]), ARGV[4], tonumber(ARGV[5]), clock())
return 1
