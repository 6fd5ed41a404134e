-- PK.PREPARE: reserve KEYS[1] for ARGV[1] unless a live record holds it.
-- ARGV: value, expiry mode, ms, retention ms.
-- Returns 1 reserved, 0 held by a live record.
local now = clock()
local _, t = load(KEYS[1])
if t ~= nil and live(t, now) then
  return 0
end
local ttlAt, ts = expiry(ARGV[2], ARGV[3], now)
save(KEYS[1], ARGV[1], ttlAt, ts, tonumber(ARGV[4]))
return 1
