#!/usr/bin/env ruby
# prepkey from Ruby with redis-rb (Debian's ruby-redis).
#
# Run by clients/run.sh against a sidecar started with --requirepass; it
# reads PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if
# any check fails.
require "redis"

HOST = ENV.fetch("PREPKEY_HOST", "127.0.0.1")
PORT = Integer(ENV.fetch("PREPKEY_PORT", "6380"))
PASSWORD = ENV["PREPKEY_PASSWORD"]
NS = "username-rb" # each client of the suite has its own namespace

$passed = 0
$failed = 0

def check(what, got, want)
  if got == want
    $passed += 1
  else
    $failed += 1
    puts "FAIL #{what}: got #{got.inspect}, want #{want.inspect}"
  end
end

# error_of is the reply error a call raises, or nil.
def error_of
  yield
  nil
rescue Redis::CommandError => e
  e.message
end

r = Redis.new(host: HOST, port: PORT, password: PASSWORD)
pk = ->(*args) { r.call(*args) }

# AUTH: a wrong password and no password are refused.
begin
  Redis.new(host: HOST, port: PORT, password: "wrong").ping
  check("wrong password refused", true, false)
rescue Redis::BaseError => e
  check("wrong password", e.message, "WRONGPASS invalid username-password pair or user is disabled.")
end
check("no password", error_of { Redis.new(host: HOST, port: PORT).call("PK.GET", NS, "alice") },
      "NOAUTH Authentication required.")

# Sign-up: reserve the username before emitting the event.
user = '{"userId":"42"}'
check("sign-up", pk.("PK.PREPARE", NS, "alice", user, "EX", 300), 1)
check("taken", pk.("PK.PREPARE", NS, "alice", '{"userId":"7"}'), 0)
check("get", pk.("PK.GET", NS, "alice"), user)
# Username change: alice -> alice2 in one step.
check("change", pk.("PK.REPREPARE", NS, "alice2", user, "FROM", "alice", "IFEQ", user), 1)
check("old name free", pk.("PK.GET", NS, "alice"), nil)
# Release.
check("release", pk.("PK.ROLLBACK", NS, "alice2", "IFEQ", user), 1)

# Binary keys and values, byte for byte.
key = "\x00\xff\r\nk".b
value = (0..255).map(&:chr).join.b
check("binary prepare", pk.("PK.PREPARE", NS, key, value), 1)
check("binary get", pk.("PK.GET", NS, key).b, value)

# TTL: the reservation expires; PK.GETVALUE still shows it (retained).
check("ttl prepare", pk.("PK.PREPARE", NS, "ttl", "v", "PX", 200), 1)
deadline = Time.now + 10
sleep 0.05 while pk.("PK.GET", NS, "ttl") && Time.now < deadline
check("expired", pk.("PK.GET", NS, "ttl"), nil)
value_at, ttl_at = pk.("PK.GETVALUE", NS, "ttl")
check("expired record retained", [value_at, ttl_at <= (Time.now.to_f * 1000)], ["v", true])
check("expired key reserved again", pk.("PK.PREPARE", NS, "ttl", "v2"), 1)

# A pipeline of 100 commands, answered in order.
replies = r.pipelined do |p|
  100.times { |i| p.call("PK.PREPARE", NS, "p#{i}", "v#{i}") }
end
check("pipeline", replies, [1] * 100)

# A transaction: MULTI/EXEC.
replies = r.multi do |tx|
  tx.call("PK.PREPARE", NS, "tx-user", "v")
  tx.call("PK.PREPARE", NS, "tx-email", "v")
end
check("transaction", replies, [1, 1])
aborted = error_of do
  r.multi do |tx|
    tx.call("PK.PREPARE", NS, "tx-other", "v")
    tx.call("PK.PREPARE", NS, "tx-other2", "v", "EX") # refused: syntax
  end
end
# redis-rb raises the refused command's error; EXEC answered EXECABORT
check("execabort", aborted, "ERR syntax error")
check("aborted block stored nothing", pk.("PK.GET", NS, "tx-other"), nil)

# Errors: Redis's words, as Redis::CommandError.
check("syntax", error_of { pk.("PK.PREPARE", NS, "k", "v", "EX") }, "ERR syntax error")
check("arity", error_of { pk.("PK.GET", NS) }, "ERR wrong number of arguments for 'pk.get' command")
mismatch = error_of { pk.("PK.REPREPARE", NS, "new", "v", "FROM", "nobody", "IFEQ", "v") }
check("mismatch", mismatch.to_s.start_with?("MISMATCH "), true)

puts "ruby (redis-rb #{Redis::VERSION}): #{$passed} passed, #{$failed} failed"
exit($failed.zero? ? 0 : 1)
