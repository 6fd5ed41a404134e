#!/usr/bin/python3
"""prepkey from Python with redis-py (Debian's python3-redis).

Run by clients/run.sh against a sidecar started with --requirepass; it reads
PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if any check
fails.
"""
import os
import sys
import time

import redis

HOST = os.environ.get("PREPKEY_HOST", "127.0.0.1")
PORT = int(os.environ.get("PREPKEY_PORT", "6380"))
PASSWORD = os.environ.get("PREPKEY_PASSWORD")
NS = "username-py"  # each client of the suite has its own namespace

passed = failed = 0


def check(what, got, want):
    global passed, failed
    if got == want:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: got {got!r}, want {want!r}")


def error_of(f):
    """The reply error a call raises, or None."""
    try:
        f()
    except redis.ResponseError as e:
        return str(e)
    return None


r = redis.Redis(host=HOST, port=PORT, password=PASSWORD)
pk = r.execute_command

# AUTH: a wrong password and no password are refused.
try:
    redis.Redis(host=HOST, port=PORT, password="wrong").ping()
    check("wrong password refused", True, False)
except redis.RedisError as e:
    check("wrong password", str(e), "WRONGPASS invalid username-password pair or user is disabled.")
try:
    redis.Redis(host=HOST, port=PORT).execute_command("PK.GET", NS, "alice")
    check("no password refused", True, False)
except redis.RedisError as e:
    check("no password", str(e), "Authentication required.")

# Sign-up: reserve the username before emitting the event.
user = b'{"userId":"42"}'
check("sign-up", pk("PK.PREPARE", NS, "alice", user, "EX", 300), 1)
check("taken", pk("PK.PREPARE", NS, "alice", b'{"userId":"7"}'), 0)
check("get", pk("PK.GET", NS, "alice"), user)
# Username change: alice -> alice2 in one step.
check("change", pk("PK.REPREPARE", NS, "alice2", user, "FROM", "alice", "IFEQ", user), 1)
check("old name free", pk("PK.GET", NS, "alice"), None)
# Release (a failed command rolls back only its own reservation).
check("release other's value", pk("PK.ROLLBACK", NS, "alice2", "IFEQ", b"other"), 0)
check("release", pk("PK.ROLLBACK", NS, "alice2", "IFEQ", user), 1)

# Binary keys and values, byte for byte.
key, value = b"\x00\xff\r\nk", bytes(range(256))
check("binary prepare", pk("PK.PREPARE", NS, key, value), 1)
check("binary get", pk("PK.GET", NS, key), value)

# TTL: the reservation expires; PK.GETVALUE still shows it (retained).
check("ttl prepare", pk("PK.PREPARE", NS, "ttl", "v", "PX", 200), 1)
deadline = time.monotonic() + 10
while pk("PK.GET", NS, "ttl") is not None and time.monotonic() < deadline:
    time.sleep(0.05)
check("expired", pk("PK.GET", NS, "ttl"), None)
value, ttl_at = pk("PK.GETVALUE", NS, "ttl")
check("expired record retained", (value, ttl_at <= time.time() * 1000), (b"v", True))
check("expired key reserved again", pk("PK.PREPARE", NS, "ttl", "v2"), 1)

# A pipeline of 100 commands (not a transaction), answered in order.
p = r.pipeline(transaction=False)
for i in range(100):
    p.execute_command("PK.PREPARE", NS, f"p{i}", f"v{i}")
check("pipeline", p.execute(), [1] * 100)
p = r.pipeline(transaction=False)
for i in range(100):
    p.execute_command("PK.GET", NS, f"p{i}")
check("pipeline get", p.execute(), [f"v{i}".encode() for i in range(100)])

# A transaction: redis-py's default pipeline is MULTI/EXEC.
p = r.pipeline()
p.execute_command("PK.PREPARE", NS, "tx-user", "v")
p.execute_command("PK.PREPARE", NS, "tx-email", "v")
check("transaction", p.execute(), [1, 1])
p = r.pipeline()
p.execute_command("PK.PREPARE", NS, "tx-other", "v")
p.execute_command("PK.PREPARE", NS, "tx-other2", "v", "EX")  # refused: syntax
try:
    p.execute()
    check("transaction with a refused command aborts", True, False)
except redis.ResponseError as e:
    # redis-py reports the refused command rather than EXEC's EXECABORT
    check("execabort", str(e), "Command # 2 (PK.PREPARE username-py tx-other2 v EX) of pipeline caused error: syntax error")
check("aborted block stored nothing", pk("PK.GET", NS, "tx-other"), None)

# Errors: Redis's words, as the client's error type.
check("syntax", error_of(lambda: pk("PK.PREPARE", NS, "k", "v", "EX")), "syntax error")
check("arity", error_of(lambda: pk("PK.GET", NS)), "wrong number of arguments for 'pk.get' command")
mismatch = error_of(lambda: pk("PK.REPREPARE", NS, "new", "v", "FROM", "nobody", "IFEQ", "v"))
check("mismatch", (mismatch or "").startswith("MISMATCH"), True)

print(f"python (redis-py {redis.__version__}): {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
