-- PK.REPREPARE … FROM … (op_move). KEYS[1]: the new key, KEYS[2]: the old
-- key, in one slot. ARGV: new value, old value, expiry mode, ms, retention
-- ms.
return op_move(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], clock(), tonumber(ARGV[5]))
