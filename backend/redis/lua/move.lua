-- PK.REPREPARE … FROM … in one step: reserve KEYS[1] (new) for ARGV[1] and
-- release KEYS[2] (old) if its value is ARGV[2], live or expired but
-- retained. Both keys must be in one slot. ARGV: new value, old value,
-- expiry mode, ms, retention ms.
-- Returns 1 moved, 0 a live record holds the new key, 2 the old key has no
-- record or another value; only 1 changes anything.
local now = clock()
local retention = tonumber(ARGV[5])
local _, newT = load(KEYS[1])
if newT ~= nil and live(newT, now) then
  return 0
end
local oldV, oldT = load(KEYS[2])
if oldV == nil or oldV ~= ARGV[2] or gone(oldT, now, retention) then
  return 2
end
local ttlAt, ts = expiry(ARGV[3], ARGV[4], now)
redis.call('DEL', KEYS[2])
save(KEYS[1], ARGV[1], ttlAt, ts, retention)
return 1
