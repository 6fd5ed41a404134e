"""The asyncio client against a real sidecar, in RESP2 and (with redis-py >= 5) RESP3."""

from __future__ import annotations

import asyncio
import sys
import time
import unittest
from urllib.parse import quote
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Tuple

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from prepkey import AsyncPrepkey, MismatchError, PrepkeyError, Record, ScanRecord, TTL, UnavailableError

from .support import (
    DEADLINE_SECONDS,
    AsyncRecording,
    AsyncRollbackFails,
    aclose,
    async_hiredis_decodes,
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
    _Base = unittest.IsolatedAsyncioTestCase
else:
    _Base = object

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)


def in_an_hour() -> datetime:
    return whole_ms(datetime.now(timezone.utc) + timedelta(hours=1))


class AsyncCases(_Base):
    """Every case of test_sync, through redis.asyncio, once per protocol."""

    protocol = 2
    env: Sidecars

    @classmethod
    def setUpClass(cls) -> None:
        reason = resp3_skip_reason() if cls.protocol == 3 else None
        if reason:
            print(f"\nskipping {cls.__name__}: {reason}", file=sys.stderr)
            raise unittest.SkipTest(reason)
        cls.env = sidecars()

    async def asyncSetUp(self) -> None:
        self.redis: Any = redis.asyncio.Redis(**client_kwargs(self.protocol))
        self.addAsyncCleanup(aclose, self.redis)
        self.wire = AsyncRecording(self.redis)
        self.pk = AsyncPrepkey(self.wire)
        self.down: Any = redis.asyncio.Redis(**client_kwargs(self.protocol, port=self.env.unavailable_port))
        self.addAsyncCleanup(aclose, self.down)
        self.pk_down = AsyncPrepkey(self.down)
        self.ns = unique("pya")
        self.nsb = self.ns.encode()

    async def wait_expired(self, key: str) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while await self.pk.get(self.ns, key) is not None:
            if time.monotonic() > deadline:
                self.fail(f"{key} still live after {DEADLINE_SECONDS}s")
            await asyncio.sleep(0.01)

    async def collect(self, records: Any) -> Dict[bytes, ScanRecord]:
        seen: Dict[bytes, ScanRecord] = {}
        async for record in records:
            self.assertIsInstance(record, ScanRecord)
            if record.key in seen:
                self.assertEqual(seen[record.key], record)
            seen[record.key] = record
        return seen

    # --- the connection ----------------------------------------------------

    async def test_speaks_the_protocol_asked_for(self) -> None:
        self.assertEqual(resp_of(await self.redis.client_info()), str(self.protocol))

    async def test_from_url_and_aclose(self) -> None:
        env = self.env
        url = f"redis://:{quote(env.password or '', safe='')}@{env.host}:{env.port}"
        extra = {"protocol": self.protocol} if speaks_resp3() else {}
        closed: List[str] = []
        async with AsyncPrepkey.from_url(url, **extra) as pk:
            self.assertIsInstance(pk.client, redis.asyncio.Redis)
            self.assertIs(await pk.prepare(self.ns, "url", "v"), True)
            original = getattr(pk.client, "aclose", None) or getattr(pk.client, "close")

            async def close_inner() -> None:
                closed.append("opened by the helper")
                await original()

            setattr(pk.client, "aclose", close_inner)
            setattr(pk.client, "close", close_inner)
        self.assertEqual(await self.pk.get(self.ns, "url"), b"v")
        self.assertEqual(closed, ["opened by the helper"])

        async def close() -> None:
            closed.append("the caller's")

        # A client the caller made stays open: the caller closes it.
        async with AsyncPrepkey(self.wire) as mine:
            setattr(self.wire, "aclose", close)
        await mine.aclose()
        self.assertEqual(closed, ["opened by the helper"])

    # --- prepare, get, get_value --------------------------------------------

    async def test_prepare_and_get(self) -> None:
        user = b'{"userId":"42"}'
        self.assertIs(await self.pk.prepare(self.ns, "alice", user), True)
        self.assertIs(await self.pk.prepare(self.ns, "alice", b'{"userId":"7"}'), False)
        self.assertIs(await self.pk.prepare(self.ns, "alice", user), False)
        self.assertEqual(await self.pk.get(self.ns, "alice"), user)
        self.assertIsNone(await self.pk.get(self.ns, "bob"))
        self.assertEqual(self.wire.sent[0], (b"PK.PREPARE", self.nsb, b"alice", user))
        self.assertEqual(self.wire.sent[-1], (b"PK.GET", self.nsb, b"bob"))

    async def test_str_is_utf8_and_bytes_are_exact(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "zoë", "café"), True)
        self.assertEqual(await self.pk.get(self.ns, "zoë".encode("utf-8")), "café".encode("utf-8"))
        key, value = b"\x00\xff\r\nk", bytes(range(256))
        self.assertIs(await self.pk.prepare(self.ns, key, value), True)
        self.assertEqual(await self.pk.get(self.ns, key), value)
        self.assertEqual(await self.pk.get_value(self.ns, key), Record(value, None))
        self.assertIs(await self.pk.prepare(self.ns, "empty", b""), True)
        self.assertEqual(await self.pk.get(self.ns, "empty"), b"")

    async def test_bytes_back_from_a_decoding_client(self) -> None:
        decoding: Any = redis.asyncio.Redis(**client_kwargs(self.protocol, decode_responses=True))
        self.addAsyncCleanup(aclose, decoding)
        pk = AsyncPrepkey(decoding)
        self.assertIs(await pk.prepare(self.ns, "zoë", "café"), True)
        self.assertEqual(await pk.get(self.ns, "zoë"), "café".encode("utf-8"))
        self.assertEqual(await pk.get_value(self.ns, "zoë"), Record("café".encode("utf-8"), None))
        self.assertIs(await pk.rollback(self.ns, "zoë"), True)
        not_utf8 = b"\xff\xfe\x00"
        at = in_an_hour()
        if async_hiredis_decodes():
            # redis-py's own failure, documented in the README.
            self.assertIs(await pk.prepare(self.ns, b"\xc3", not_utf8, ttl=at), True)
            with self.assertRaises(UnicodeDecodeError):
                await pk.get(self.ns, b"\xc3")
            return
        self.assertIs(await pk.prepare(self.ns, b"\xc3", not_utf8, ttl=at), True)
        self.assertEqual(await pk.get(self.ns, b"\xc3"), not_utf8)
        self.assertEqual(await pk.get_value(self.ns, b"\xc3"), Record(not_utf8, at))
        self.assertEqual([r async for r in pk.scan(self.ns)], [ScanRecord(b"\xc3", not_utf8, at)])

    async def test_get_value_expiry_equals_the_pxat_set(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "forever", "v"), True)
        self.assertEqual(await self.pk.get_value(self.ns, "forever"), Record(b"v", None))
        at = in_an_hour()
        self.assertIs(await self.pk.prepare(self.ns, "at", "v", ttl=at), True)
        self.assertEqual(self.wire.sent[-1][-2:], (b"PXAT", str((at - EPOCH) // MS).encode()))
        self.assertEqual(await self.pk.get_value(self.ns, "at"), Record(b"v", at))
        fine = at.replace(microsecond=at.microsecond + 999)
        self.assertIs(await self.pk.prepare(self.ns, "fine", "v", ttl=fine), True)
        self.assertEqual(await self.pk.get_value(self.ns, "fine"), Record(b"v", at))
        self.assertIsNone(await self.pk.get_value(self.ns, "nobody"))

    async def test_ttl_as_a_duration_and_as_seconds(self) -> None:
        cases: List[Tuple[str, TTL, Tuple[bytes, bytes], int]] = [
            ("px", timedelta(seconds=30, microseconds=1500), (b"PX", b"30001"), 30001),
            ("ex", timedelta(seconds=60), (b"PX", b"60000"), 60000),
        ]
        for key, ttl, words, span_ms in cases:
            with self.subTest(ttl=ttl):
                before = now_ms_floor()
                self.assertIs(await self.pk.prepare(self.ns, key, "v", ttl=ttl), True)
                after = now_ms_ceil()
                self.assertEqual(self.wire.sent[-1][-2:], words)
                record = await self.pk.get_value(self.ns, key)
                assert record is not None and record.expires_at is not None
                self.assertGreaterEqual(record.expires_at, ms_datetime(before + span_ms))
                self.assertLessEqual(record.expires_at, ms_datetime(after + span_ms))

    async def test_an_expired_record_is_retained_then_replaced(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "short", "v1", ttl=timedelta(milliseconds=50)), True)
        await self.wait_expired("short")
        record = await self.pk.get_value(self.ns, "short")
        assert record is not None and record.expires_at is not None
        self.assertEqual(record.value, b"v1")
        self.assertFalse(record.is_live())
        self.assertIs(await self.pk.reprepare(self.ns, "short", "v9"), False)
        self.assertIs(await self.pk.prepare(self.ns, "short", "v2"), True)
        self.assertEqual(await self.pk.get_value(self.ns, "short"), Record(b"v2", None))

    # --- rollback ---------------------------------------------------------

    async def test_rollback(self) -> None:
        self.assertIs(await self.pk.rollback(self.ns, "k"), False)
        self.assertIs(await self.pk.prepare(self.ns, "k", "v"), True)
        self.assertIs(await self.pk.rollback(self.ns, "k"), True)
        self.assertIsNone(await self.pk.get_value(self.ns, "k"))
        self.assertIs(await self.pk.rollback(self.ns, "k"), False)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"k"))

    async def test_rollback_if_eq(self) -> None:
        self.assertIs(await self.pk.rollback_if_eq(self.ns, "k", "v"), False)
        self.assertIs(await self.pk.prepare(self.ns, "k", "v"), True)
        self.assertIs(await self.pk.rollback_if_eq(self.ns, "k", "other"), False)
        self.assertEqual(await self.pk.get(self.ns, "k"), b"v")
        self.assertIs(await self.pk.rollback_if_eq(self.ns, "k", "v"), True)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"k", b"IFEQ", b"v"))
        self.assertIsNone(await self.pk.get_value(self.ns, "k"))

    # --- reprepare and change_key -------------------------------------------

    async def test_reprepare(self) -> None:
        self.assertIs(await self.pk.reprepare(self.ns, "k", "v"), False)
        self.assertIsNone(await self.pk.get_value(self.ns, "k"))
        first, second = in_an_hour(), in_an_hour() + timedelta(minutes=5)
        self.assertIs(await self.pk.prepare(self.ns, "k", "v1", ttl=first), True)
        self.assertIs(await self.pk.reprepare(self.ns, "k", "v2"), True)
        self.assertEqual(await self.pk.get_value(self.ns, "k"), Record(b"v2", None))
        self.assertIs(await self.pk.reprepare(self.ns, "k", "v3", if_eq="nope"), False)
        self.assertEqual(await self.pk.get_value(self.ns, "k"), Record(b"v2", None))
        self.assertIs(await self.pk.reprepare(self.ns, "k", "v3", if_eq="v2", ttl=second), True)
        self.assertEqual(await self.pk.get_value(self.ns, "k"), Record(b"v3", second))
        self.assertIs(await self.pk.reprepare(self.ns, "k", "v4", if_eq=b"v3", keep_ttl=True), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.REPREPARE", self.nsb, b"k", b"v4", b"IFEQ", b"v3", b"KEEPTTL"),
        )
        self.assertEqual(await self.pk.get_value(self.ns, "k"), Record(b"v4", second))

    async def test_change_key_moves_the_reservation(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "alice", "u42"), True)
        at = in_an_hour()
        self.assertIs(await self.pk.change_key(self.ns, "alice", "u42", "alice2", "u42b", ttl=at), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.REPREPARE", self.nsb, b"alice2", b"u42b", b"FROM", b"alice", b"IFEQ", b"u42",
             b"PXAT", str((at - EPOCH) // MS).encode()),
        )
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))
        self.assertEqual(await self.pk.get_value(self.ns, "alice2"), Record(b"u42b", at))

    async def test_change_key_new_key_held(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "alice", "u42"), True)
        self.assertIs(await self.pk.prepare(self.ns, "bob", "u7"), True)
        self.assertIs(await self.pk.change_key(self.ns, "alice", "u42", "bob", "u42"), False)
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"u42", None))
        self.assertEqual(await self.pk.get_value(self.ns, "bob"), Record(b"u7", None))

    async def test_change_key_mismatch(self) -> None:
        self.assertIs(await self.pk.prepare(self.ns, "alice", "u42"), True)
        for old_key, old_value in (("alice", "u7"), ("nobody", "u42")):
            with self.subTest(old_key=old_key, old_value=old_value):
                with self.assertRaises(MismatchError) as caught:
                    await self.pk.change_key(self.ns, old_key, old_value, "alice2", "u42")
                self.assertEqual(str(caught.exception), "MISMATCH old key has no record with that value")
                self.assertIsInstance(caught.exception, PrepkeyError)
                self.assertIsNone(await self.pk.get_value(self.ns, "alice2"))
                self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"u42", None))

    # --- mprepare -----------------------------------------------------------

    async def test_mprepare_all_or_none(self) -> None:
        emails = unique("pya-email")
        at = in_an_hour()
        both = [(self.ns, "alice", "u1"), (emails, "alice@example.com", "u1")]
        self.assertIs(await self.pk.mprepare(both, ttl=at), True)
        self.assertEqual(
            self.wire.sent[-1],
            (b"PK.MPREPARE", b"2", self.nsb, b"alice", b"u1", emails.encode(),
             b"alice@example.com", b"u1", b"PXAT", str((at - EPOCH) // MS).encode()),
        )
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"u1", at))
        self.assertEqual(await self.pk.get_value(emails, "alice@example.com"), Record(b"u1", at))
        clash = [(self.ns, "bob", "u2"), (emails, "alice@example.com", "u2"), (self.ns, "carol", "u2")]
        self.assertIs(await self.pk.mprepare(clash), False)
        self.assertIsNone(await self.pk.get_value(self.ns, "bob"))
        self.assertIsNone(await self.pk.get_value(self.ns, "carol"))
        self.assertEqual(await self.pk.get_value(emails, "alice@example.com"), Record(b"u1", at))
        with self.assertRaises(PrepkeyError) as caught:
            await self.pk.mprepare([(self.ns, "d", "1"), (self.ns, "d", "2")])
        self.assertEqual(str(caught.exception), "duplicate key in 'pk.mprepare'")

    # --- scan ---------------------------------------------------------------

    async def test_scan_follows_the_cursor_across_pages(self) -> None:
        at = in_an_hour()
        expected: Dict[bytes, ScanRecord] = {}
        for i in range(25):
            ttl = at if i % 5 == 0 else None
            self.assertIs(await self.pk.prepare(self.ns, f"k{i:02}", f"v{i}", ttl=ttl), True)
            expected[f"k{i:02}".encode()] = ScanRecord(f"k{i:02}".encode(), f"v{i}".encode(), ttl)
        self.wire.sent.clear()
        self.wire.replies.clear()
        self.assertEqual(await self.collect(self.pk.scan(self.ns, count=3)), expected)
        cursors = [b"0"] + [reply[0] for reply in self.wire.replies]
        self.assertEqual(cursors[-1], b"0")
        self.assertEqual(self.wire.sent, [(b"PK.SCAN", self.nsb, c, b"COUNT", b"3") for c in cursors[:-1]])
        self.assertGreaterEqual(len([r for r in self.wire.replies if r[1]]), 2)

    async def test_scan_match_live_expired(self) -> None:
        for key in ("a0", "a1", "a2", "b0", "b1"):
            self.assertIs(await self.pk.prepare(self.ns, key, "live"), True)
        for key in ("x0", "x1"):
            self.assertIs(await self.pk.prepare(self.ns, key, "gone", ttl=timedelta(milliseconds=50)), True)
        await self.wait_expired("x0")
        await self.wait_expired("x1")
        self.assertEqual(set(await self.collect(self.pk.scan(self.ns, match="a*"))), {b"a0", b"a1", b"a2"})
        self.assertEqual(set(await self.collect(self.pk.scan(self.ns, match=b"b?", count=1))), {b"b0", b"b1"})
        live = await self.collect(self.pk.scan(self.ns, live=True))
        self.assertEqual(set(live), {b"a0", b"a1", b"a2", b"b0", b"b1"})
        expired = await self.collect(self.pk.scan(self.ns, expired=True))
        self.assertEqual(set(expired), {b"x0", b"x1"})
        for record in expired.values():
            self.assertEqual(record.value, b"gone")
            self.assertFalse(record.is_live())
        self.assertEqual(len(await self.collect(self.pk.scan(self.ns))), 7)

    # --- errors -------------------------------------------------------------

    async def test_unavailable_on_every_operation(self) -> None:
        ns, pk = self.ns, self.pk_down

        async def scan_all() -> List[ScanRecord]:
            return [r async for r in pk.scan(ns)]

        calls: List[Tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("prepare", lambda: pk.prepare(ns, "k", "v")),
            ("get", lambda: pk.get(ns, "k")),
            ("get_value", lambda: pk.get_value(ns, "k")),
            ("rollback", lambda: pk.rollback(ns, "k")),
            ("rollback_if_eq", lambda: pk.rollback_if_eq(ns, "k", "v")),
            ("reprepare", lambda: pk.reprepare(ns, "k", "v", if_eq="w")),
            ("change_key", lambda: pk.change_key(ns, "k", "v", "k2", "v")),
            ("mprepare", lambda: pk.mprepare([(ns, "k", "v"), (ns, "k2", "v")])),
            ("scan", scan_all),
        ]
        for what, call in calls:
            with self.subTest(what):
                with self.assertRaises(UnavailableError) as caught:
                    await call()
                self.assertTrue(str(caught.exception).startswith("UNAVAILABLE "), str(caught.exception))
                self.assertIsInstance(caught.exception, redis.ResponseError)
        self.assertTrue(await self.down.ping())

    async def test_other_error_replies(self) -> None:
        with self.assertRaises(PrepkeyError) as caught:
            await self.pk.prepare(self.ns, "k", "v", ttl=datetime(2000, 1, 1, tzinfo=timezone.utc))
        self.assertIs(type(caught.exception), PrepkeyError)
        self.assertEqual(str(caught.exception), "invalid expire time in 'pk.prepare' command")

    async def test_transport_error_passes_through(self) -> None:
        nowhere: Any = redis.asyncio.Redis(
            **client_kwargs(self.protocol, port=closed_port(), retry=Retry(NoBackoff(), 0))
        )
        self.addAsyncCleanup(aclose, nowhere)
        with self.assertRaises(redis.ConnectionError) as caught:
            await AsyncPrepkey(nowhere).prepare(self.ns, "k", "v")
        self.assertNotIsInstance(caught.exception, PrepkeyError)

    async def test_argument_errors_send_nothing(self) -> None:
        pk, ns = self.pk, self.ns
        cases: List[Tuple[type, Callable[[], Any]]] = [
            (TypeError, lambda: pk.prepare(ns, "k", None)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", 42)),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, "k", {"userId": 42})),  # type: ignore[arg-type]
            (TypeError, lambda: pk.prepare(ns, None, "v")),  # type: ignore[arg-type]
            (ValueError, lambda: pk.prepare(ns, "", "v")),
            (ValueError, lambda: pk.prepare("user name", "k", "v")),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl=timedelta(0))),
            (ValueError, lambda: pk.prepare(ns, "k", "v", ttl=datetime(2030, 1, 1))),
            (TypeError, lambda: pk.prepare(ns, "k", "v", ttl=1.5)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.get(ns, "")),
            (TypeError, lambda: pk.get_value(ns, None)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.rollback(ns, "")),
            (TypeError, lambda: pk.rollback_if_eq(ns, "k", None)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.reprepare(ns, "k", "v", keep_ttl=True, ttl_s=60)),
            (ValueError, lambda: pk.change_key(ns, "k", "v", "k", "v")),
            (TypeError, lambda: pk.change_key(ns, "k", "v", "k2", None)),  # type: ignore[arg-type]
            (ValueError, lambda: pk.mprepare([])),
            (ValueError, lambda: pk.mprepare([(ns, f"k{i}", "v") for i in range(65)])),
            (TypeError, lambda: pk.mprepare([(ns, "k", "v"), (ns, "k2", None)])),  # type: ignore[list-item]
        ]
        for index, (error, call) in enumerate(cases):
            with self.subTest(case=index):
                with self.assertRaises(error):
                    await call()
                self.assertEqual(self.wire.sent, [])
        # scan checks its arguments when called, before any iteration.
        for error, options in (
            (ValueError, dict(count=0)),
            (ValueError, dict(count=1001)),
            (ValueError, dict(live=True, expired=True)),
            (TypeError, dict(match=None, count="3")),
        ):
            with self.subTest(scan=options):
                with self.assertRaises(error):
                    pk.scan(ns, **options)  # type: ignore[arg-type]
        ran: List[bool] = []
        with self.assertRaises(ValueError):
            async with pk.using_prepare(ns, "", "v") as prepared:
                ran.append(prepared)
        self.assertEqual((ran, self.wire.sent), ([], []))
        self.assertIsNone(await pk.get(ns, "k"))
        self.assertEqual(self.wire.sent, [(b"PK.GET", self.nsb, b"k")])

    # --- using_prepare, case by case -----------------------------------------

    async def test_using_prepare_not_prepared(self) -> None:
        """1. prepare -> False: the block runs with False; nothing rolled back."""
        self.assertIs(await self.pk.prepare(self.ns, "alice", "other"), True)
        self.wire.sent.clear()
        ran: List[bool] = []
        async with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
            ran.append(prepared)
        self.assertEqual(ran, [False])
        failure = LookupError("alice is taken")
        with self.assertRaises(LookupError) as caught:
            async with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
                ran.append(prepared)
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertEqual(ran, [False, False])
        self.assertEqual(self.wire.names(), [b"PK.PREPARE", b"PK.GETVALUE"] * 2)
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"other", None))

    async def test_using_prepare_body_succeeds(self) -> None:
        """2. prepared, the block succeeds: nothing rolled back."""
        at = in_an_hour()
        async with self.pk.using_prepare(self.ns, "alice", "mine", ttl=at) as prepared:
            self.assertIs(prepared, True)
            self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"mine", at))
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"mine", at))
        self.assertNotIn(b"PK.ROLLBACK", self.wire.names())

    async def test_using_prepare_body_fails(self) -> None:
        """3. prepared, the block raises: ROLLBACK IFEQ, then the block's exception."""
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(RuntimeError) as caught:
            async with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
                self.assertIs(prepared, True)
                self.assertEqual(await self.pk.get(self.ns, "alice"), b"mine")
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    async def test_using_prepare_rollback_answering_false_is_not_an_error(self) -> None:
        """3. ... the rollback's :0 (the record is someone else's now) is fine."""
        failure = RuntimeError("late")
        with self.assertRaises(RuntimeError) as caught:
            async with self.pk.using_prepare(self.ns, "alice", "mine"):
                self.assertIs(await self.pk.rollback(self.ns, "alice"), True)
                self.assertIs(await self.pk.prepare(self.ns, "alice", "theirs"), True)
                raise failure
        self.assertIs(caught.exception, failure)
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"theirs", None))

    async def test_using_prepare_body_cancelled(self) -> None:
        """3. ... a cancelled block is a failed one: rolled back, then CancelledError."""
        started = asyncio.Event()

        async def reserve_then_wait() -> None:
            async with self.pk.using_prepare(self.ns, "alice", "mine") as prepared:
                self.assertIs(prepared, True)
                started.set()
                await asyncio.Event().wait()  # until cancelled

        task = asyncio.ensure_future(reserve_then_wait())
        await asyncio.wait_for(started.wait(), DEADLINE_SECONDS)
        self.assertEqual(await self.pk.get(self.ns, "alice"), b"mine")
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertEqual(self.wire.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    async def test_using_prepare_rollback_unavailable(self) -> None:
        """4. the rollback fails: its error, raised from the block's."""
        client = AsyncRollbackFails(self.redis, rollback_client=self.down)
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(UnavailableError) as caught:
            async with AsyncPrepkey(client).using_prepare(self.ns, "alice", "mine") as prepared:
                self.assertIs(prepared, True)
                raise failure
        self.assertIs(caught.exception.__cause__, failure)
        self.assertTrue(str(caught.exception).startswith("UNAVAILABLE "))
        self.assertEqual(client.sent[-1], (b"PK.ROLLBACK", self.nsb, b"alice", b"IFEQ", b"mine"))
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"mine", None))

    async def test_using_prepare_rollback_transport_error(self) -> None:
        """4. ... a transport error of the rollback, as redis-py raised it."""
        lost = redis.ConnectionError("connection lost during the rollback")
        client = AsyncRollbackFails(self.redis, error=lost)
        failure = RuntimeError("the event was not emitted")
        with self.assertRaises(redis.ConnectionError) as caught:
            async with AsyncPrepkey(client).using_prepare(self.ns, "alice", "mine"):
                raise failure
        self.assertIs(caught.exception, lost)
        self.assertIs(lost.__cause__, failure)
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"mine", None))

    async def test_using_prepare_unavailable_on_prepare(self) -> None:
        """5. -UNAVAILABLE on prepare: UnavailableError, the block not run."""
        ran: List[bool] = []
        with self.assertRaises(UnavailableError):
            async with self.pk_down.using_prepare(self.ns, "alice", "mine") as prepared:
                ran.append(prepared)
        self.assertEqual(ran, [])

    async def test_using_prepare_race_has_one_winner(self) -> None:
        """Twenty tasks race for one key (redis.asyncio's pool gives each
        command in flight its own connection): exactly one block runs
        prepared, and the key holds that one's value."""
        start = asyncio.Event()
        outcomes: Dict[int, bool] = {}

        async def contender(i: int) -> None:
            await start.wait()
            async with self.pk.using_prepare(self.ns, "race", f"u{i}") as prepared:
                outcomes[i] = prepared

        tasks = [asyncio.ensure_future(contender(i)) for i in range(20)]
        await asyncio.sleep(0)  # every task is waiting on start
        start.set()
        await asyncio.wait_for(asyncio.gather(*tasks), DEADLINE_SECONDS)
        winners = [i for i, prepared in outcomes.items() if prepared]
        self.assertEqual((len(outcomes), len(winners)), (20, 1))
        self.assertEqual(await self.pk.get(self.ns, "race"), f"u{winners[0]}".encode())

    async def test_run_prepared(self) -> None:
        async def done(prepared: bool) -> Tuple[str, bool]:
            return "done", prepared

        async def fails(prepared: bool) -> None:
            raise ValueError(f"body saw {prepared}")

        self.assertEqual(await self.pk.run_prepared(self.ns, "a", "v", done), ("done", True))
        self.assertEqual(await self.pk.run_prepared(self.ns, "a", "w", done), ("done", False))
        self.assertEqual(await self.pk.get(self.ns, "a"), b"v")
        with self.assertRaises(ValueError) as caught:
            await self.pk.run_prepared(self.ns, "b", "v", fails, ttl_s=60)
        self.assertEqual(str(caught.exception), "body saw True")
        self.assertIsNone(await self.pk.get_value(self.ns, "b"))


class AsyncResp2Tests(AsyncCases, unittest.IsolatedAsyncioTestCase):
    protocol = 2


class AsyncResp3Tests(AsyncCases, unittest.IsolatedAsyncioTestCase):
    protocol = 3


if __name__ == "__main__":
    unittest.main()
