-- PK.ROLLBACK (op_rollback). KEYS[1]: the key. ARGV: '1' when IFEQ is
-- given else '0', the IFEQ value, retention ms.
return op_rollback(KEYS[1], ARGV[1], ARGV[2], clock(), tonumber(ARGV[3]))
