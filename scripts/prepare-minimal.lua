-- The minimal prepare script an application writes when it reserves keys in
-- Redis itself, without the sidecar: scripts/bench.sh sends it directly to
-- Redis (EVALSHA) as the yardstick of the redis:// backend (issue 14).
-- Read the server's clock, look at the record's ttlAt, and reserve the key
-- unless a live record holds it. No forever records, no retention, no
-- checks of its own arguments.
-- KEYS[1]: the key. ARGV[1]: the value, ARGV[2]: the TTL in ms.
-- Returns 1 reserved, 0 held.
local tm = redis.call('TIME')
local now = tm[1] * 1000 + math.floor(tm[2] / 1000)
local t = redis.call('HGET', KEYS[1], 't')
if t and tonumber(t) > now then
  return 0
end
local at = now + ARGV[2]
redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', at)
redis.call('PEXPIREAT', KEYS[1], at)
return 1
