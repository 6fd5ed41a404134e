-- PK.GET / PK.GETVALUE: the record of KEYS[1], live or expired but retained.
-- ARGV: retention ms. Returns false (nil) when there is none, else
-- {value, ttlAt as stored ("0" is forever), 1 live / 0 expired}.
local now = clock()
local v, t, stored = load(KEYS[1])
if v == nil or gone(t, now, tonumber(ARGV[1])) then
  return false
end
if live(t, now) then
  return {v, stored, 1}
end
return {v, stored, 0}
