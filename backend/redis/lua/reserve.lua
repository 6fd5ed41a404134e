
-- First step of a key change across two Cluster slots: PK.PREPARE of the
-- new key that also returns the record it replaces, so that unreserve.lua
-- can put it back if the key change is undone.
-- KEYS[1]: the new key. ARGV: value, expiry mode, ms, retention ms.
-- Returns 0 when a live record holds the key; {1} when it had no record;
-- {1, value, ttlAt} when it replaced an expired, retained record; the
-- error 'TOOLARGE <bytes>', with nothing written, when that record is
-- larger than the sidecar returns (maxValue): the undo could not be given
-- it back.
local now = clock()
local prev, prevT, prevStored = load(KEYS[1])
local reply = {1}
if prev ~= nil then
  if live(prevT, now) then
    return 0
  end
  if prev == big or #prev > maxValue or #prevStored > 20 then
    return redis.error_reply('TOOLARGE ' .. string.format('%.0f', size(KEYS[1])))
  end
  reply = {1, prev, prevStored}
end
local ttlAt, ts = expiry(ARGV[2], ARGV[3], now)
save(KEYS[1], ARGV[1], ttlAt, ts, tonumber(ARGV[4]), now)
return reply
