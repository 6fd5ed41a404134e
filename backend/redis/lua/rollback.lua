-- PK.ROLLBACK: delete the record of KEYS[1], live or expired but retained.
-- ARGV: '1' when IFEQ is given else '0', the IFEQ value, retention ms.
-- Returns 1 deleted, 0 no record or another value.
local now = clock()
local v, t = load(KEYS[1])
if v == nil or gone(t, now, tonumber(ARGV[3])) then
  return 0
end
if ARGV[1] == '1' and v ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
