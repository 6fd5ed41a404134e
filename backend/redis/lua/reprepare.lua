-- PK.REPREPARE (same key): replace the value of the live record of KEYS[1].
-- ARGV: value, '1' when IFEQ is given else '0', the IFEQ value, expiry mode
-- (as expiry() takes, or 'k' keep), ms, retention ms.
-- Returns 1 replaced, 0 no live record or another value.
local now = clock()
local v, t, stored = load(KEYS[1])
if v == nil or not live(t, now) then
  return 0
end
if ARGV[2] == '1' and v ~= ARGV[3] then
  return 0
end
local ttlAt, ts = t, stored
if ARGV[4] ~= 'k' then
  ttlAt, ts = expiry(ARGV[4], ARGV[5], now)
end
save(KEYS[1], ARGV[1], ttlAt, ts, tonumber(ARGV[6]))
return 1
