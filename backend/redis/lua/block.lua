-- A list of PK operations run as one script, so as one isolated unit: no
-- other command runs on the server between them, and each sees the writes
-- of those before it. EXEC runs a transaction's PK commands with it; it is
-- written for any list (a PK.MPREPARE's reservations, the commands of a
-- pipeline), whose caller reads the replies it needs.
--
-- All operations read one clock: the block happens at one instant.
-- KEYS: the keys of the operations, in order (one each, two for a move:
-- new then old). ARGV[1]: retention ms; then each operation as an opcode
-- and its arguments:
--   'p' value mode ms               PK.PREPARE
--   'g'                             PK.GET / PK.GETVALUE
--   'r' ifeq want                   PK.ROLLBACK
--   'u' value ifeq want mode ms     PK.REPREPARE (same key)
--   'm' newValue oldValue mode ms   PK.REPREPARE … FROM …
--   'M' n mode ms value1 … valueN   PK.MPREPARE (n keys), all or none
-- Returns an array with each operation's answer, as its own script's.
-- The list is checked whole before anything runs: a malformed one changes
-- nothing.
local width = {p = {4, 1}, g = {1, 1}, r = {3, 1}, u = {6, 1}, m = {5, 2}}
-- widthAt is the width of the operation at ARGV[a]: PK.MPREPARE's depends
-- on its number of keys.
local function widthAt(a)
  if ARGV[a] == 'M' then
    local n = tonumber(ARGV[a + 1])
    if n == nil or n < 1 then
      return nil
    end
    return {3 + n + 1, n}
  end
  return width[ARGV[a]]
end
local k, a = 1, 2
while a <= #ARGV do
  local w = widthAt(a)
  if w == nil then
    return redis.error_reply('ERR prepkey block: unknown operation ' .. tostring(ARGV[a]))
  end
  k, a = k + w[2], a + w[1]
end
if a ~= #ARGV + 1 or k ~= #KEYS + 1 then
  return redis.error_reply('ERR prepkey block: arguments do not match the operations')
end

local now = clock()
local retention = tonumber(ARGV[1])
local out = {}
k, a = 1, 2
while a <= #ARGV do
  local code = ARGV[a]
  if code == 'p' then
    out[#out + 1] = op_prepare(KEYS[k], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], now, retention)
  elseif code == 'g' then
    out[#out + 1] = op_get(KEYS[k], now, retention)
  elseif code == 'r' then
    out[#out + 1] = op_rollback(KEYS[k], ARGV[a + 1], ARGV[a + 2], now, retention)
  elseif code == 'u' then
    out[#out + 1] = op_reprepare(KEYS[k], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], now, retention)
  elseif code == 'm' then
    out[#out + 1] = op_move(KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], now, retention)
  else -- 'M'
    local n = tonumber(ARGV[a + 1])
    local keys, values = {}, {}
    for i = 1, n do
      keys[i], values[i] = KEYS[k + i - 1], ARGV[a + 3 + i]
    end
    out[#out + 1] = op_mprepare(keys, values, ARGV[a + 2], ARGV[a + 3], now, retention)
  end
  local w = widthAt(a)
  k, a = k + w[2], a + w[1]
end
return out
