-- PK.GET / PK.GETVALUE (op_get). KEYS[1]: the key. ARGV: retention ms.
return op_get(KEYS[1], clock(), tonumber(ARGV[1]))
