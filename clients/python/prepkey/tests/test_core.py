"""The shared argument and reply handling, without a sidecar: the reply shapes
a client may hand back (bytes or, from a client that ignores NEVER_DECODE,
str) and the mapping of error replies to the typed errors."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta, timezone

import asyncio
import socket

import redis
from redis.exceptions import ResponseError

from prepkey import MismatchError, PrepkeyError, Record, ScanRecord, UnavailableError, outcome_unknown
from prepkey import _core
from prepkey.errors import from_response_error

UTC = timezone.utc


class RepliesTest(unittest.TestCase):
    def test_bool(self) -> None:
        self.assertIs(_core.parse_bool(1), True)
        self.assertIs(_core.parse_bool(0), False)
        for reply in (2, -1, b"1", None, True, [1]):
            with self.subTest(reply=reply):
                with self.assertRaises(PrepkeyError) as caught:
                    _core.parse_bool(reply)
                self.assertEqual(str(caught.exception), f"unexpected reply from the sidecar: {reply!r}")

    def test_record(self) -> None:
        self.assertIsNone(_core.parse_record(None))
        self.assertEqual(_core.parse_record([b"v", -1]), Record(b"v", None))
        self.assertEqual(
            _core.parse_record([b"v", 1796169300782]),
            Record(b"v", datetime(2026, 12, 1, 23, 55, 0, 782000, tzinfo=UTC)),
        )
        self.assertEqual(_core.parse_record(("café", b"0")), Record("café".encode(), datetime(1970, 1, 1, tzinfo=UTC)))
        for reply in ([b"v"], [b"v", b"x"], [b"v", None], b"v", [b"v", 1, 2]):
            with self.subTest(reply=reply):
                with self.assertRaises(PrepkeyError):
                    _core.parse_record(reply)

    def test_scan_page(self) -> None:
        cursor, records = _core.parse_scan_page([b"AQz", [[b"k", b"v", -1], ["k2", "v2", 86400000]]])
        self.assertEqual(cursor, b"AQz")
        self.assertEqual(
            records,
            [ScanRecord(b"k", b"v", None), ScanRecord(b"k2", b"v2", datetime(1970, 1, 2, tzinfo=UTC))],
        )
        self.assertEqual(_core.parse_scan_page(["0", []]), (b"0", []))
        for reply in ([b"0"], [b"0", None], [b"0", [[b"k", b"v"]]]):
            with self.subTest(reply=reply):
                with self.assertRaises(PrepkeyError):
                    _core.parse_scan_page(reply)


class ArgumentsTest(unittest.TestCase):
    def test_ttl_words(self) -> None:
        self.assertEqual(_core.ttl_args(None), ())
        self.assertEqual(_core.ttl_args(timedelta(minutes=5)), (b"PX", b"300000"))
        self.assertEqual(_core.ttl_args(timedelta(milliseconds=1, microseconds=999)), (b"PX", b"1"))
        self.assertEqual(_core.ttl_args(300), (b"EX", b"300"))
        at = datetime(2030, 1, 2, 3, 4, 5, 678999, tzinfo=UTC)
        self.assertEqual(_core.ttl_args(at), (b"PXAT", b"1893553445678"))
        east = at.astimezone(timezone(timedelta(hours=9)))
        self.assertEqual(_core.ttl_args(east), (b"PXAT", b"1893553445678"))

    def test_ttl_units(self) -> None:
        self.assertEqual(_core.ttl_words(), ())
        self.assertEqual(_core.ttl_words(ttl_ms=1500), (b"PX", b"1500"))
        self.assertEqual(_core.ttl_words(ttl_s=5), (b"EX", b"5"))
        self.assertEqual(_core.ttl_words(timedelta(seconds=5)), (b"PX", b"5000"))
        with self.assertWarns(DeprecationWarning):
            self.assertEqual(_core.ttl_words(5), (b"EX", b"5"))
        for kwargs, error in (
            (dict(ttl=timedelta(seconds=1), ttl_s=1), ValueError),
            (dict(ttl_ms=1, ttl_s=1), ValueError),
            (dict(ttl_ms=0), ValueError),
            (dict(ttl_s=1.5), TypeError),
            (dict(ttl_ms=True), TypeError),
        ):
            with self.subTest(**kwargs):
                with self.assertRaises(error):
                    _core.ttl_words(**kwargs)  # type: ignore[arg-type]

    def test_namespace(self) -> None:
        self.assertEqual(_core.namespace("user_name.v2-x"), b"user_name.v2-x")
        self.assertEqual(_core.namespace(b"N" * 64), b"N" * 64)
        for bad in ("", "a b", "a/b", "é", "x" * 65, b"\x00"):
            with self.subTest(name=bad):
                with self.assertRaises(ValueError):
                    _core.namespace(bad)


class ErrorsTest(unittest.TestCase):
    def test_mapping(self) -> None:
        unavailable = from_response_error(ResponseError("UNAVAILABLE redis: timeout"))
        self.assertIs(type(unavailable), UnavailableError)
        self.assertEqual(str(unavailable), "UNAVAILABLE redis: timeout")
        self.assertEqual(repr(unavailable), "UnavailableError('UNAVAILABLE redis: timeout')")
        mismatch = from_response_error(ResponseError("MISMATCH old key has no record with that value"))
        self.assertIs(type(mismatch), MismatchError)
        other = from_response_error(ResponseError("syntax error"))
        self.assertIs(type(other), PrepkeyError)
        self.assertEqual(str(other), "syntax error")
        # A prefix is a whole word: UNAVAILABLEX is some other error.
        self.assertIs(type(from_response_error(ResponseError("UNAVAILABLEX y"))), PrepkeyError)
        self.assertIs(type(from_response_error(ResponseError("UNAVAILABLE"))), UnavailableError)
        for error in (unavailable, mismatch, other):
            self.assertIsInstance(error, ResponseError)


class OutcomeUnknownTest(unittest.TestCase):
    def test_table(self) -> None:
        maybe = [
            UnavailableError("UNAVAILABLE redis: timeout"),
            ResponseError("UNAVAILABLE backend down"),  # from a raw execute_command
            redis.ConnectionError("Connection closed by server."),
            redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused."),
            redis.exceptions.BusyLoadingError("loading"),
            redis.TimeoutError("Timeout reading from socket"),
            ConnectionResetError(104, "Connection reset by peer"),
            ConnectionRefusedError(111, "Connection refused"),
            socket.timeout("timed out"),
            asyncio.TimeoutError(),
            asyncio.CancelledError(),
            KeyboardInterrupt(),
        ]
        known = [
            MismatchError("MISMATCH old key has no record with that value"),
            PrepkeyError("syntax error"),
            ResponseError("UNAVAILABLEX not the prefix"),
            redis.AuthenticationError("invalid username-password pair"),
            redis.exceptions.AuthorizationError("NOPERM"),
            ValueError("key is empty"),
            TypeError("value must be str or bytes"),
            LookupError("the caller's own"),
        ]
        for err in maybe:
            with self.subTest(err=repr(err)):
                self.assertIs(outcome_unknown(err), True)
        for err in known:
            with self.subTest(err=repr(err)):
                self.assertIs(outcome_unknown(err), False)


if __name__ == "__main__":
    unittest.main()
