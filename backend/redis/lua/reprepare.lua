-- PK.REPREPARE, same key (op_reprepare). KEYS[1]: the key. ARGV: value,
-- '1' when IFEQ is given else '0', the IFEQ value, expiry mode (as
-- expiry() takes, or 'k' keep), ms, retention ms.
return op_reprepare(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], clock(), tonumber(ARGV[6]))
