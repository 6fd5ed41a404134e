-- ops.lua follows record.lua in every script: each PK operation as a
-- function of its keys and arguments, the clock reading it runs at and the
-- retention, so that a script for one command (prepare.lua, ...) and the
-- script for a list of them (block.lua) decide alike: one way to decide a
-- thing. Each returns what the command's own script returns.

-- PK.PREPARE: reserve key for value unless a live record holds it.
-- Returns 1 reserved, 0 held by a live record.
local function op_prepare(key, value, mode, ms, now, retention)
  local _, t = load(key)
  if t ~= nil and live(t, now) then
    return 0
  end
  local ttlAt, ts = expiry(mode, ms, now)
  save(key, value, ttlAt, ts, retention)
  return 1
end

-- PK.GET / PK.GETVALUE: false (nil) when there is no record, else
-- {value, ttlAt as stored ("0" is forever), 1 live / 0 expired}.
local function op_get(key, now, retention)
  local v, t, stored = load(key)
  if v == nil or gone(t, now, retention) then
    return false
  end
  if live(t, now) then
    return {v, stored, 1}
  end
  return {v, stored, 0}
end

-- PK.ROLLBACK: delete the record, live or expired but retained, if the
-- condition holds (ifeq '1': the value must be want).
-- Returns 1 deleted, 0 no record or another value.
local function op_rollback(key, ifeq, want, now, retention)
  local v, t = load(key)
  if v == nil or gone(t, now, retention) then
    return 0
  end
  if ifeq == '1' and v ~= want then
    return 0
  end
  redis.call('DEL', key)
  return 1
end

-- PK.REPREPARE (same key): replace the value of the live record if the
-- condition holds; mode 'k' keeps its ttlAt.
-- Returns 1 replaced, 0 no live record or another value.
local function op_reprepare(key, value, ifeq, want, mode, ms, now, retention)
  local v, t, stored = load(key)
  if v == nil or not live(t, now) then
    return 0
  end
  if ifeq == '1' and v ~= want then
    return 0
  end
  local ttlAt, ts = t, stored
  if mode ~= 'k' then
    ttlAt, ts = expiry(mode, ms, now)
  end
  save(key, value, ttlAt, ts, retention)
  return 1
end

-- PK.REPREPARE … FROM … in one step: reserve newKey for newValue and
-- release oldKey if its value is oldValue, live or expired but retained.
-- Both keys must be in one slot.
-- Returns 1 moved, 0 a live record holds the new key, 2 the old key has no
-- record or another value; only 1 changes anything.
local function op_move(newKey, oldKey, newValue, oldValue, mode, ms, now, retention)
  local _, newT = load(newKey)
  if newT ~= nil and live(newT, now) then
    return 0
  end
  local oldV, oldT = load(oldKey)
  if oldV == nil or oldV ~= oldValue or gone(oldT, now, retention) then
    return 2
  end
  local ttlAt, ts = expiry(mode, ms, now)
  redis.call('DEL', oldKey)
  save(newKey, newValue, ttlAt, ts, retention)
  return 1
end


-- PK.MPREPARE in one step: reserve every key of keys for the value of the
-- same index in values, unless a live record holds any of them; then
-- nothing changes. Every key gets one ttlAt. The keys must be in one slot.
-- Returns 1 all reserved, 0 a live record holds one of them.
local function op_mprepare(keys, values, mode, ms, now, retention)
  for i = 1, #keys do
    local _, t = load(keys[i])
    if t ~= nil and live(t, now) then
      return 0
    end
  end
  local ttlAt, ts = expiry(mode, ms, now)
  for i = 1, #keys do
    save(keys[i], values[i], ttlAt, ts, retention)
  end
  return 1
end
