-- PK.PREPARE (op_prepare). KEYS[1]: the key. ARGV: value, expiry mode, ms,
-- retention ms.
return op_prepare(KEYS[1], ARGV[1], ARGV[2], ARGV[3], clock(), tonumber(ARGV[4]))
