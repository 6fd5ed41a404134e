"""The sync client against a real sidecar, in RESP2 and (with redis-py >= 5) RESP3."""

from __future__ import annotations

import sys
import time
import unittest
from urllib.parse import quote
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Tuple

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from prepkey import MismatchError, Prepkey, PrepkeyError, Record, ScanRecord, TTL, UnavailableError

from .support import (
    DEADLINE_SECONDS,
    Recording,
    RollbackFails,
    client_kwargs,
    closed_port,
    ms_datetime,
    now_ms_ceil,
    now_ms_floor,
    resp3_skip_reason,
    Sidecars,
    resp_of,
    sidecars,
    speaks_resp3,
    unique,
    whole_ms,
)

if TYPE_CHECKING:
    _Base = unittest.TestCase
else:
    _Base = object

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)


def in_an_hour() -> datetime:
    return whole_ms(datetime.now(timezone.utc) + timedelta(hours=1))


class SyncCases(_Base):
    """Every case, run once per protocol by the classes below."""

    protocol = 2
    env: Sidecars

    @classmethod
    def setUpClass(cls) -> None:
        reason = resp3_skip_reason() if cls.protocol == 3 else None
        if reason:
            print(f"\nskipping {cls.__name__}: {reason}", file=sys.stderr)
            raise unittest.SkipTest(reason)
        cls.env = sidecars()

    def setUp(self) -> None:
        self.redis = redis.Redis(**client_kwargs(self.protocol))
        self.addCleanup(self.redis.close)
        self.wire = Recording(self.redis)
        self.pk = Prepkey(self.wire)
        self.down = redis.Redis(**client_kwargs(self.protocol, port=self.env.unavailable_port))
        self.addCleanup(self.down.close)
        self.pk_down = Prepkey(self.down)
        self.ns = unique("py")
        self.nsb = self.ns.encode()

    def wait_expired(self, key: str) -> None:
        """Wait until ``key``'s record is no longer live (an event, polled)."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while self.pk.get(self.ns, key) is not None:
            if time.monotonic() > deadline:
                self.fail(f"{key} still live after {DEADLINE_SECONDS}s")
            time.sleep(0.01)

    # --- the connection ----------------------------------------------------

    def test_speaks_the_protocol_asked_for(self) -> None:
        self.assertEqual(resp_of(self.redis.client_info()), str(self.protocol))

    def test_from_url_and_close(self) -> None:
        env = self.env
        url = f"redis://:{quote(env.password or '', safe='')}@{env.host}:{env.port}"
        extra = {"protocol": self.protocol} if speaks_resp3() else {}
        closed: List[str] = []
        with Prepkey.from_url(url, **extra) as pk:
            self.assertIsInstance(pk.client, redis.Redis)
            self.assertIs(pk.prepare(self.ns, "url", "v"), True)
            close = pk.client.close  # type: ignore[attr-defined]
            setattr(pk.client, "close", lambda: (closed.append("opened by the helper"), close()))
        self.assertEqual(self.pk.get(self.ns, "url"), b"v")
        self.assertEqual(closed, ["opened by the helper"])
        # A client the caller made stays open: the caller closes it.
        setattr(self.redis, "close", lambda: closed.append("the caller's"))
        with Prepkey(self.redis) as pk:
            pass
        pk.close()
        self.assertEqual(closed, ["opened by the helper"])
        self.assertEqual(self.pk.get(self.ns, "url"), b"v")

    # --- prepare, get, get_value --------------------------------------------

    def test_prepare_and_get(self) -> None:
        user = b'{"userId":"42"}'
        self.assertIs(self.pk.prepare(self.ns, "alice", user), True)
        self.assertIs(self.pk.prepare(self.ns, "alice", b'{"userId":"7"}'), False)
        self.assertIs(self.pk.prepare(self.ns, "alice", user), False)  # held, whatever the value
        self.assertEqual(self.pk.get(self.ns, "alice"), user)
        self.assertIsNone(self.pk.get(self.ns, "bob"))
        self.assertEqual(self.wire.sent[0], (b"PK.PREPARE", self.nsb, b"alice", user))
        self.assertEqual(self.wire.sent[-1], (b"PK.GET", self.nsb, b"bob"))

    def test_str_is_utf8_and_bytes_are_exact(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "zoë", "café"), True)
        self.assertEqual(self.pk.get(self.ns, "zoë".encode("utf-8")), "café".encode("utf-8"))
        key, value = b"\x00\xff\r\nk", bytes(range(256))
        self.assertIs(self.pk.prepare(self.ns, bytearray(key), memoryview(value)), True)
        self.assertEqual(self.pk.get(self.ns, key), value)
        self.assertEqual(self.pk.get_value(self.ns, key), Record(value, None))
        self.assertIs(self.pk.prepare(self.ns, "empty", b""), True)  # a value may be empty
        self.assertEqual(self.pk.get(self.ns, "empty"), b"")

    def test_bytes_back_from_a_decoding_client(self) -> None:
        decoding = redis.Redis(**client_kwargs(self.protocol, decode_responses=True))
        self.addCleanup(decoding.close)
        pk = Prepkey(decoding)
        not_utf8 = b"\xff\xfe\x00"
        at = in_an_hour()
        self.assertIs(pk.prepare(self.ns, b"\xc3", not_utf8, ttl=at), True)
        self.assertEqual(pk.get(self.ns, b"\xc3"), not_utf8)
        self.assertEqual(pk.get_value(self.ns, b"\xc3"), Record(not_utf8, at))
        self.assertEqual(list(pk.scan(self.ns)), [ScanRecord(b"\xc3", not_utf8, at)])

    def test_get_value_expiry_equals_the_pxat_set(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "forever", "v"), True)
        self.assertEqual(self.pk.get_value(self.ns, "forever"), Record(b"v", None))
        at = in_an_hour()
        self.assertIs(self.pk.prepare(self.ns, "at", "v", ttl=at), True)
        self.assertEqual(self.wire.sent[-1][-2:], (b"PXAT", str((at - EPOCH) // MS).encode()))
        record = self.pk.get_value(self.ns, "at")
        self.assertEqual(record, Record(b"v", at))
        assert record is not None and record.expires_at is not None
        self.assertEqual(record.expires_at.tzinfo, timezone.utc)
        self.assertTrue(record.is_live())
        # Sub-millisecond parts are dropped, another zone is the same instant.
        fine = at.replace(microsecond=at.microsecond + 999)
        self.assertIs(self.pk.prepare(self.ns, "fine", "v", ttl=fine), True)
        self.assertEqual(self.pk.get_value(self.ns, "fine"), Record(b"v", at))
        zoned = at.astimezone(timezone(timedelta(hours=5, minutes=30)))
        self.assertIs(self.pk.prepare(self.ns, "zoned", "v", ttl=zoned), True)
        self.assertEqual(self.pk.get_value(self.ns, "zoned"), Record(b"v", at))
        self.assertIsNone(self.pk.get_value(self.ns, "nobody"))

    def test_ttl_as_a_duration_and_as_seconds(self) -> None:
        cases: List[Tuple[str, TTL, Tuple[bytes, bytes], int]] = [
            ("px", timedelta(seconds=30, microseconds=1500), (b"PX", b"30001"), 30001),
            ("ex", timedelta(seconds=60), (b"PX", b"60000"), 60000),
        ]
        for key, ttl, words, span_ms in cases:
            with self.subTest(ttl=ttl):
                before = now_ms_floor()
                self.assertIs(self.pk.prepare(self.ns, key, "v", ttl=ttl), True)
                after = now_ms_ceil()
                self.assertEqual(self.wire.sent[-1][-2:], words)
                record = self.pk.get_value(self.ns, key)
                assert record is not None and record.expires_at is not None
                self.assertGreaterEqual(record.expires_at, ms_datetime(before + span_ms))
                self.assertLessEqual(record.expires_at, ms_datetime(after + span_ms))

    def test_an_expired_record_is_retained_then_replaced(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "short", "v1", ttl=timedelta(milliseconds=50)), True)
        self.wait_expired("short")
        record = self.pk.get_value(self.ns, "short")
        assert record is not None and record.expires_at is not None
        self.assertEqual(record.value, b"v1")
        self.assertFalse(record.is_live())
        self.assertLessEqual(record.expires_at, datetime.now(timezone.utc))
        self.assertIs(self.pk.reprepare(self.ns, "short", "v9"), False)  # no live record
        self.assertIs(self.pk.prepare(self.ns, "short", "v2"), True)
        self.assertEqual(self.pk.get_value(self.ns, "short"), Record(b"v2", None))

    # --- rollback ---------------------------------------------------------

    def test_rollback(self) -> None:
        self.assertIs(self.pk.rollback(self.ns, "k"), False)
        self.assertIs(self.pk.prepare(self.ns, "k", "v"), True)
        self.assertIs(self.pk.rollback(self.ns, "k"), True)
        self.assertIsNone(self.pk.get_value(self.ns, "k"))
        self.assertIs(self.pk.rollback(self.ns, "k"), False)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"k"))

    def test_rollback_if_eq(self) -> None:
        self.assertIs(self.pk.rollback_if_eq(self.ns, "k", "v"), False)
        self.assertIs(self.pk.prepare(self.ns, "k", "v"), True)
        self.assertIs(self.pk.rollback_if_eq(self.ns, "k", "other"), False)
        self.assertEqual(self.pk.get(self.ns, "k"), b"v")
        self.assertIs(self.pk.rollback_if_eq(self.ns, "k", "v"), True)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"k", b"IFEQ", b"v"))
        self.assertIsNone(self.pk.get_value(self.ns, "k"))
        # An expired record is released too.
        self.assertIs(self.pk.prepare(self.ns, "gone", "v", ttl=timedelta(milliseconds=50)), True)
        self.wait_expired("gone")
        self.assertIs(self.pk.rollback_if_eq(self.ns, "gone", "v"), True)
        self.assertIsNone(self.pk.get_value(self.ns, "gone"))

    # --- reprepare and change_key -------------------------------------------

    def test_reprepare(self) -> None:
        self.assertIs(self.pk.reprepare(self.ns, "k", "v"), False)
        self.assertIsNone(self.pk.get_value(self.ns, "k"))
        first, second = in_an_hour(), in_an_hour() + timedelta(minutes=5)
        self.assertIs(self.pk.prepare(self.ns, "k", "v1", ttl=first), True)
        self.assertIs(self.pk.reprepare(self.ns, "k", "v2"), True)
        self.assertEqual(self.pk.get_value(self.ns, "k"), Record(b"v2", None))  # forever
        self.assertIs(self.pk.reprepare(self.ns, "k", "v3", if_eq="nope"), False)
        self.assertEqual(self.pk.get_value(self.ns, "k"), Record(b"v2", None))
        self.assertIs(self.pk.reprepare(self.ns, "k", "v3", if_eq="v2", ttl=second), True)
        self.assertEqual(self.pk.get_value(self.ns, "k"), Record(b"v3", second))
        self.assertIs(self.pk.reprepare(self.ns, "k", "v4", keep_ttl=True), True)
        self.assertEqual(self.pk.get_value(self.ns, "k"), Record(b"v4", second))
        self.assertIs(self.pk.reprepare(self.ns, "k", "v5", if_eq=b"v4", keep_ttl=True), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.REPREPARE", self.nsb, b"k", b"v5", b"IFEQ", b"v4", b"KEEPTTL"),
        )
        self.assertEqual(self.pk.get_value(self.ns, "k"), Record(b"v5", second))

    def test_change_key_moves_the_reservation(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "alice", "u42"), True)
        at = in_an_hour()
        self.assertIs(self.pk.change_key(self.ns, "alice", "u42", "alice2", "u42b", ttl=at), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.REPREPARE", self.nsb, b"alice2", b"u42b", b"FROM", b"alice", b"IFEQ", b"u42",
             b"PXAT", str((at - EPOCH) // MS).encode()),
        )
        self.assertIsNone(self.pk.get_value(self.ns, "alice"))
        self.assertEqual(self.pk.get_value(self.ns, "alice2"), Record(b"u42b", at))

    def test_change_key_new_key_held(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "alice", "u42"), True)
        self.assertIs(self.pk.prepare(self.ns, "bob", "u7"), True)
        self.assertIs(self.pk.change_key(self.ns, "alice", "u42", "bob", "u42"), False)
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"u42", None))
        self.assertEqual(self.pk.get_value(self.ns, "bob"), Record(b"u7", None))

    def test_change_key_mismatch(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "alice", "u42"), True)
        for old_key, old_value in (("alice", "u7"), ("nobody", "u42")):
            with self.subTest(old_key=old_key, old_value=old_value):
                with self.assertRaises(MismatchError) as caught:
                    self.pk.change_key(self.ns, old_key, old_value, "alice2", "u42")
                self.assertEqual(str(caught.exception), "MISMATCH old key has no record with that value")
                self.assertIsInstance(caught.exception, PrepkeyError)
                self.assertIsInstance(caught.exception, redis.ResponseError)
                self.assertIsNone(self.pk.get_value(self.ns, "alice2"))  # not left reserved
                self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"u42", None))

    # --- mprepare -----------------------------------------------------------

    def test_mprepare_all_or_none(self) -> None:
        emails = unique("py-email")
        at = in_an_hour()
        both = [(self.ns, "alice", "u1"), (emails, "alice@example.com", "u1")]
        self.assertIs(self.pk.mprepare(both, ttl=at), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.MPREPARE", b"2", self.nsb, b"alice", b"u1", emails.encode(),
             b"alice@example.com", b"u1", b"PXAT", str((at - EPOCH) // MS).encode()),
        )
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"u1", at))
        self.assertEqual(self.pk.get_value(emails, "alice@example.com"), Record(b"u1", at))
        clash = [(self.ns, "bob", "u2"), (emails, "alice@example.com", "u2"), (self.ns, "carol", "u2")]
        self.assertIs(self.pk.mprepare(iter(clash)), False)
        self.assertIsNone(self.pk.get_value(self.ns, "bob"))
        self.assertIsNone(self.pk.get_value(self.ns, "carol"))
        self.assertEqual(self.pk.get_value(emails, "alice@example.com"), Record(b"u1", at))

    def test_mprepare_limits(self) -> None:
        many = [(self.ns, f"k{i}", f"v{i}") for i in range(64)]
        self.assertIs(self.pk.mprepare(many), True)
        self.assertEqual(self.pk.get(self.ns, "k63"), b"v63")
        with self.assertRaises(PrepkeyError) as caught:
            self.pk.mprepare([(self.ns, "d", "1"), (self.ns, "d", "2")])
        self.assertEqual(str(caught.exception), "duplicate key in 'pk.mprepare'")
        self.assertIs(type(caught.exception), PrepkeyError)
        self.assertIsNone(self.pk.get_value(self.ns, "d"))

    # --- scan ---------------------------------------------------------------

    def test_scan_follows_the_cursor_across_pages(self) -> None:
        at = in_an_hour()
        expected: Dict[bytes, ScanRecord] = {}
        for i in range(25):
            ttl = at if i % 5 == 0 else None
            self.assertIs(self.pk.prepare(self.ns, f"k{i:02}", f"v{i}", ttl=ttl), True)
            expected[f"k{i:02}".encode()] = ScanRecord(f"k{i:02}".encode(), f"v{i}".encode(), ttl)
        self.wire.sent.clear()
        self.wire.replies.clear()
        seen = self.collect(self.pk.scan(self.ns, count=3))
        self.assertEqual(seen, expected)
        self.assert_followed(self.wire.sent, self.wire.replies, (b"COUNT", b"3"))

    def assert_followed(self, sent: List[Tuple[Any, ...]], replies: List[Any], options: Tuple[bytes, ...]) -> None:
        """The scan went from cursor 0 through each cursor handed out until
        0, and records came on more than one page."""
        cursors = [b"0"] + [reply[0] for reply in replies]
        self.assertEqual(cursors[-1], b"0")
        self.assertEqual(sent, [(b"PK.SCAN", self.nsb, c) + options for c in cursors[:-1]])
        pages_with_records = [reply for reply in replies if reply[1]]
        self.assertGreaterEqual(len(pages_with_records), 2, f"records on one page only: {replies}")

    def test_scan_match_live_expired(self) -> None:
        for key in ("a0", "a1", "a2", "b0", "b1"):
            self.assertIs(self.pk.prepare(self.ns, key, "live"), True)
        for key in ("x0", "x1"):
            self.assertIs(self.pk.prepare(self.ns, key, "gone", ttl=timedelta(milliseconds=50)), True)
        self.wait_expired("x0")
        self.wait_expired("x1")
        self.assertEqual(set(self.collect(self.pk.scan(self.ns, match="a*"))), {b"a0", b"a1", b"a2"})
        self.assertEqual(set(self.collect(self.pk.scan(self.ns, match=b"b?", count=1))), {b"b0", b"b1"})
        live = self.collect(self.pk.scan(self.ns, live=True))
        self.assertEqual(set(live), {b"a0", b"a1", b"a2", b"b0", b"b1"})
        expired = self.collect(self.pk.scan(self.ns, expired=True, count=1000))
        self.assertEqual(set(expired), {b"x0", b"x1"})
        for record in expired.values():
            self.assertEqual(record.value, b"gone")
            self.assertFalse(record.is_live())
        self.assertEqual(len(self.collect(self.pk.scan(self.ns))), 7)
        self.assertEqual(list(self.pk.scan(unique("py-empty"))), [])

    def collect(self, records: Any) -> Dict[bytes, ScanRecord]:
        """The records by key; a record seen twice must be the same."""
        seen: Dict[bytes, ScanRecord] = {}
        for record in records:
            self.assertIsInstance(record, ScanRecord)
            if record.key in seen:
                self.assertEqual(seen[record.key], record)
            seen[record.key] = record
        return seen

    # --- errors -------------------------------------------------------------

    def test_unavailable_on_every_operation(self) -> None:
        ns, pk = self.ns, self.pk_down
        calls: List[Tuple[str, Callable[[], Any]]] = [
            ("prepare", lambda: pk.prepare(ns, "k", "v")),
            ("get", lambda: pk.get(ns, "k")),
            ("get_value", lambda: pk.get_value(ns, "k")),
            ("rollback", lambda: pk.rollback(ns, "k")),
            ("rollback_if_eq", lambda: pk.rollback_if_eq(ns, "k", "v")),
            ("reprepare", lambda: pk.reprepare(ns, "k", "v", if_eq="w")),
            ("change_key", lambda: pk.change_key(ns, "k", "v", "k2", "v")),
            ("mprepare", lambda: pk.mprepare([(ns, "k", "v"), (ns, "k2", "v")])),
            ("scan", lambda: list(pk.scan(ns))),
        ]
        for what, call in calls:
            with self.subTest(what):
                with self.assertRaises(UnavailableError) as caught:
                    call()
                self.assertTrue(str(caught.exception).startswith("UNAVAILABLE "), str(caught.exception))
                self.assertIsInstance(caught.exception, PrepkeyError)
                self.assertIsInstance(caught.exception, redis.ResponseError)
        self.assertTrue(self.down.ping())  # the sidecar itself answers

    def test_other_error_replies(self) -> None:
        with self.assertRaises(PrepkeyError) as caught:
            self.pk.prepare(self.ns, "k", "v", ttl=datetime(2000, 1, 1, tzinfo=timezone.utc))
        self.assertIs(type(caught.exception), PrepkeyError)
        self.assertEqual(str(caught.exception), "invalid expire time in 'pk.prepare' command")
        self.assertIsNone(self.pk.get_value(self.ns, "k"))

    def test_transport_error_passes_through(self) -> None:
        nowhere = redis.Redis(**client_kwargs(self.protocol, port=closed_port(), retry=Retry(NoBackoff(), 0)))
        self.addCleanup(nowhere.close)
        with self.assertRaises(redis.ConnectionError) as caught:
            Prepkey(nowhere).prepare(self.ns, "k", "v")
        self.assertNotIsInstance(caught.exception, PrepkeyError)

    def test_authentication_errors_are_errors(self) -> None:
        """NOAUTH and WRONGPASS come as redis-py raises them (an
        AuthenticationError; WRONGPASS a reply error in redis-py 4, so a
        PrepkeyError): never a False or a None."""
        if not self.env.password:
            self.skipTest("the sidecar has no password (PREPKEY_PASSWORD unset)")
        cases = (
            # NOAUTH to PK.GET (RESP2), or to HELLO 3 (redis-py opens RESP3 with it)
            (None, r"^Authentication required\.$|^HELLO must be called with the client already authenticated"),
            ("wrong-" + self.env.password, r"^(WRONGPASS )?invalid username-password pair or user is disabled\.$"),
        )
        for password, words in cases:
            with self.subTest(password=password):
                client = redis.Redis(**client_kwargs(self.protocol, password=password))
                self.addCleanup(client.close)
                with self.assertRaises((redis.AuthenticationError, PrepkeyError)) as caught:
                    Prepkey(client).get(self.ns, "k")
                self.assertRegex(str(caught.exception), words)

    def test_argument_errors_send_nothing(self) -> None:
        pk, ns = self.pk, self.ns
        cases: List[Tuple[type, Callable[[], Any]]] = [
            (TypeError, lambda: pk.prepare(ns, "k", None)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", 42)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", {"userId": 42})),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", 4.2)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, None, "v")),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, 7, "v")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.prepare(ns, "", "v")),
            (ValueError, lambda: pk.prepare(ns, b"", "v")),
            (TypeError, lambda: pk.prepare(None, "k", "v")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.prepare("", "k", "v")),
            (ValueError, lambda: pk.prepare("user name", "k", "v")),
            (ValueError, lambda: pk.prepare("n" * 65, "k", "v")),
            (ValueError, lambda: pk.prepare("usé", "k", "v")),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl=timedelta(0))),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl=timedelta(microseconds=999))),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl_s=-5)),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl_ms=0)),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl=datetime(2030, 1, 1))),
            (TypeError, lambda: pk.prepare(ns, "k", "v", ttl=1.5)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", "v", ttl="10")),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", "v", ttl=True)),
            (ValueError, lambda: pk.get(ns, "")),
            (TypeError, lambda: pk.get_value(ns, None)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.rollback(ns, "")),
            (TypeError, lambda: pk.rollback_if_eq(ns, "k", None)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.reprepare(ns, "k", "v", if_eq=5)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.reprepare(ns, "k", "v", keep_ttl=True, ttl_s=60)),
            (TypeError, lambda: pk.reprepare(ns, "k", "v", keep_ttl="yes")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.change_key(ns, "k", "v", "k", "v")),
            (ValueError, lambda: pk.change_key(ns, "", "v", "k2", "v")),
            (TypeError, lambda: pk.change_key(ns, "k", "v", "k2", None)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.mprepare([])),
            (ValueError, lambda: pk.mprepare([(ns, f"k{i}", "v") for i in range(65)])),
            (TypeError, lambda: pk.mprepare([(ns, "k")])),  # type: ignore[list-item]
            (ValueError, lambda: pk.mprepare([(ns, "k", "v"), (ns, "", "v")])),
            (TypeError, lambda: pk.mprepare([(ns, "k", "v"), (ns, "k2", None)])),  # type: ignore[list-item]
            (TypeError, lambda: pk.mprepare("abc")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.scan(ns, count=0)),
            (ValueError, lambda: pk.scan(ns, count=1001)),
            (TypeError, lambda: pk.scan(ns, count="3")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.scan(ns, live=True, expired=True)),
            (TypeError, lambda: pk.scan(ns, match=3)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.scan("bad name")),
        ]
        for index, (error, call) in enumerate(cases):
            with self.subTest(case=index):
                with self.assertRaises(error):
                    call()
                self.assertEqual(self.wire.sent, [])
        ran: List[bool] = []
        with self.assertRaises(ValueError):
            with pk.using_prepare(ns, "", "v") as prepared:
                ran.append(prepared)
        self.assertEqual((ran, self.wire.sent), ([], []))
        # The recorder does see what is sent; the server holds nothing.
        self.assertEqual(list(pk.scan(ns)), [])
        self.assertEqual(self.wire.sent[0], (b"PK.SCAN", self.nsb, b"0"))
        self.assertEqual({args[:2] for args in self.wire.sent}, {(b"PK.SCAN", self.nsb)})

    # --- using_prepare, case by case -----------------------------------------

    def test_using_prepare_not_prepared(self) -> None:
        """1. prepare -> False: the block runs with False; nothing rolled back,
        its result or exception as is."""
        self.assertIs(self.pk.prepare(self.ns, "alice", "other"), True)
        self.wire.sent.clear()
        ran: List[bool] = []
        with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
            ran.append(prepared)
        self.assertEqual(ran, [False])
        failure = LookupError("alice is taken")
        with self.assertRaises(LookupError) as caught:
            with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
                ran.append(prepared)
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertIsNone(failure.__cause__)
        self.assertEqual(ran, [False, False])
        # each 0 is followed by a read: a record holding "mine" would be ours
        # (a resent PREPARE answering its own first attempt)
        self.assertEqual(self.wire.names(), [b"PK.PREPARE", b"PK.GETVALUE"] * 2)
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"other", None))

    def test_using_prepare_body_succeeds(self) -> None:
        """2. prepared, the block succeeds: nothing rolled back."""
        at = in_an_hour()
        with self.pk.using_prepare(self.ns, "alice", "mine", ttl=at) as prepared:
            self.assertIs(prepared, True)
            self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"mine", at))
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"mine", at))
        self.assertNotIn(b"PK.ROLLBACK", self.wire.names())

    def test_using_prepare_body_fails(self) -> None:
        """3. prepared, the block raises: ROLLBACK IFEQ, then the block's exception."""
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(RuntimeError) as caught:
            with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
                self.assertIs(prepared, True)
                self.assertEqual(self.pk.get(self.ns, "alice"), b"mine")
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertIsNone(self.pk.get_value(self.ns, "alice"))

    def test_using_prepare_rollback_answering_false_is_not_an_error(self) -> None:
        """3. ... the rollback's :0 (the record is someone else's now) is fine."""
        failure = RuntimeError("late")
        with self.assertRaises(RuntimeError) as caught:
            with self.pk.using_prepare(self.ns, "alice", "mine"):
                self.assertIs(self.pk.rollback(self.ns, "alice"), True)
                self.assertIs(self.pk.prepare(self.ns, "alice", "theirs"), True)
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"theirs", None))

    def test_using_prepare_body_interrupted(self) -> None:
        """3. ... a KeyboardInterrupt in the block also leaves it undone."""
        with self.assertRaises(KeyboardInterrupt):
            with self.pk.using_prepare(self.ns, "alice", "mine"):
                raise KeyboardInterrupt()
        self.assertIsNone(self.pk.get_value(self.ns, "alice"))

    def test_using_prepare_rollback_unavailable(self) -> None:
        """4. the rollback fails: its error, raised from the block's."""
        client = RollbackFails(self.redis, rollback_client=self.down)
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(UnavailableError) as caught:
            with Prepkey(client).using_prepare(self.ns, "alice", "mine") as prepared:
                self.assertIs(prepared, True)
                raise failure
        self.assertIs(caught.exception.__cause__, failure)
        self.assertTrue(str(caught.exception).startswith("UNAVAILABLE "))
        self.assertEqual(client.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"mine", None))  # still held

    def test_using_prepare_rollback_transport_error(self) -> None:
        """4. ... a transport error of the rollback, as redis-py raised it."""
        lost = redis.ConnectionError("connection lost during the rollback")
        client = RollbackFails(self.redis, error=lost)
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(redis.ConnectionError) as caught:
            with Prepkey(client).using_prepare(self.ns, "alice", "mine"):
                raise failure
        self.assertIs(caught.exception, lost)
        self.assertIs(lost.__cause__, failure)
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"mine", None))

    def test_using_prepare_unavailable_on_prepare(self) -> None:
        """5. -UNAVAILABLE on prepare: UnavailableError, the block not run."""
        ran: List[bool] = []
        with self.assertRaises(UnavailableError):
            with self.pk_down.using_prepare(self.ns, "alice", "mine") as prepared:
                ran.append(prepared)
        self.assertEqual(ran, [])

    def test_run_prepared(self) -> None:
        self.assertEqual(self.pk.run_prepared(self.ns, "a", "v", lambda prepared: ("done", prepared)), ("done", True))
        self.assertEqual(self.pk.run_prepared(self.ns, "a", "w", lambda prepared: ("done", prepared)), ("done", False))
        self.assertEqual(self.pk.get(self.ns, "a"), b"v")

        def fails(prepared: bool) -> None:
            raise ValueError(f"body saw {prepared}")

        with self.assertRaises(ValueError) as caught:
            self.pk.run_prepared(self.ns, "b", "v", fails, ttl_s=60)
        self.assertEqual(str(caught.exception), "body saw True")
        self.assertIsNone(self.pk.get_value(self.ns, "b"))


class SyncResp2Tests(SyncCases, unittest.TestCase):
    protocol = 2


class SyncResp3Tests(SyncCases, unittest.TestCase):
    protocol = 3


if __name__ == "__main__":
    unittest.main()
