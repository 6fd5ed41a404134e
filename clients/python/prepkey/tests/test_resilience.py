"""Cancellation, interrupts, lost replies and resends, through a proxy in
front of the real sidecar that holds or drops what each test says
(tests/proxy.py): no key of ours may stay held, and a PREPARE resent by
redis-py's retry still counts as ours."""

from __future__ import annotations

import asyncio
import sys
import unittest
from datetime import timedelta
from typing import TYPE_CHECKING, Any, List

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

from prepkey import AsyncPrepkey, Prepkey, Record, UnavailableError, outcome_unknown

from .proxy import Proxy, wait_event
from .support import (
    DEADLINE_SECONDS,
    Recording,
    Sidecars,
    aclose,
    client_kwargs,
    closed_port,
    resp3_skip_reason,
    sidecars,
    unique,
)

if TYPE_CHECKING:
    _AsyncBase = unittest.IsolatedAsyncioTestCase
    _SyncBase = unittest.TestCase
else:
    _AsyncBase = _SyncBase = object


def recommended(retry: Any) -> dict:
    """The redis-py settings the README recommends (section "redis-py
    settings"), with ``retry`` the sync or the asyncio Retry class."""
    return dict(
        retry=retry(ExponentialBackoff(cap=0.5, base=0.01), 3),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        socket_timeout=5,
        socket_connect_timeout=2,
        health_check_interval=30,
    )


#: settle_timeout of the helpers under test: how long a cancelled call waits
#: for a reply the proxy never relays (the bound under test, not a sleep).
SETTLE = timedelta(milliseconds=300)


class Interrupting(Recording):
    """Forwards every command; after ``command`` has been executed (reply
    read), raises KeyboardInterrupt once, as a Ctrl-C while reading would."""

    def __init__(self, inner: Any, command: bytes) -> None:
        super().__init__(inner)
        self.command = command

    def execute_command(self, *args: Any, **options: Any) -> Any:
        reply = super().execute_command(*args, **options)
        if args[0] == self.command:
            self.command = b""
            raise KeyboardInterrupt
        return reply


class SyncCases(_SyncBase):
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
        self.pk = Prepkey(self.redis)
        self.proxy = Proxy(self.env.host, self.env.port)
        self.addCleanup(self.proxy.close)
        self.ns = unique("pyr")

    def via_proxy(self, **extra: Any) -> Prepkey:
        client = redis.Redis(**client_kwargs(self.protocol, port=self.proxy.port, host="127.0.0.1", **extra))
        self.addCleanup(client.close)
        return Prepkey(client)

    def test_resent_prepare_is_ours(self) -> None:
        """The reply of the first PREPARE is lost after it took effect;
        redis-py (the README's settings) resends it, the sidecar answers 0 to
        our own record: prepared is True, the block runs, its failure
        releases the key."""
        for body_fails in (False, True):
            with self.subTest(body_fails=body_fails):
                key = f"alice-{body_fails}"
                self.proxy.seen.clear()
                drop = self.proxy.rule("drop_reply", b"PK.PREPARE")
                pk = self.via_proxy(**recommended(Retry))
                ran: List[bool] = []
                try:
                    with pk.using_prepare(self.ns, key, "cmd-1") as prepared:
                        ran.append(prepared)
                        self.assertEqual(self.pk.get(self.ns, key), b"cmd-1")
                        if body_fails:
                            raise LookupError("the event was not emitted")
                except LookupError:
                    self.assertTrue(body_fails)
                self.assertTrue(drop.reached.is_set())
                self.assertEqual(self.proxy.seen.count(b"PK.PREPARE"), 2, "redis-py resent it")
                self.assertEqual(ran, [True])
                expected = None if body_fails else Record(b"cmd-1", None)
                self.assertEqual(self.pk.get_value(self.ns, key), expected)

    def test_lost_reply_with_redis_py_defaults(self) -> None:
        """redis-py's own defaults: redis-py 6 resends (0 for our record),
        4.3 raises ConnectionError (outcome unknown); either way the record
        holds our value, so the block runs prepared."""
        self.proxy.rule("drop_reply", b"PK.PREPARE")
        pk = self.via_proxy()
        with pk.using_prepare(self.ns, "alice", "cmd-1") as prepared:
            self.assertIs(prepared, True)
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"cmd-1", None))

    def test_timeout_after_the_prepare_took_effect(self) -> None:
        """The reply is held past socket_timeout (no retries): TimeoutError,
        outcome unknown; the record holds our value: prepared."""
        held = self.proxy.rule("hold_reply", b"PK.PREPARE")
        pk = self.via_proxy(socket_timeout=1.0, retry=Retry(NoBackoff(), 0))
        with pk.using_prepare(self.ns, "alice", "cmd-1") as prepared:
            self.assertIs(prepared, True)
        self.assertTrue(held.reached.is_set())
        self.assertEqual(self.pk.get_value(self.ns, "alice"), Record(b"cmd-1", None))
        # The plain call reports it, as a timeout whose outcome is unknown.
        self.proxy.rule("hold_reply", b"PK.PREPARE")
        with self.assertRaises(redis.TimeoutError) as caught:
            pk.prepare(self.ns, "bob", "cmd-2")
        self.assertTrue(outcome_unknown(caught.exception))
        self.assertEqual(self.pk.get_value(self.ns, "bob"), Record(b"cmd-2", None))

    def test_unavailable_and_not_ours_raises(self) -> None:
        """An outcome-unknown error and a record that is not ours: the block
        does not run, the error propagates."""
        down = redis.Redis(**client_kwargs(self.protocol, port=self.env.unavailable_port))
        self.addCleanup(down.close)
        ran: List[bool] = []
        with self.assertRaises(UnavailableError):
            with Prepkey(down).using_prepare(self.ns, "alice", "cmd-1") as prepared:
                ran.append(prepared)
        self.assertEqual(ran, [])

    def test_interrupted_calls_leave_nothing_held(self) -> None:
        """KeyboardInterrupt after the command took effect: prepare, mprepare
        and using_prepare release their record, change_key moves back."""
        ns = self.ns
        cases: List[Any] = [
            (b"PK.PREPARE", lambda pk: pk.prepare(ns, "p", "cmd-1")),
            (b"PK.MPREPARE", lambda pk: pk.mprepare([(ns, "m1", "cmd-1"), (ns, "m2", "cmd-1")])),
            (b"PK.PREPARE", lambda pk: pk.using_prepare(ns, "u", "cmd-1").__enter__()),
        ]
        for command, call in cases:
            with self.subTest(command=command):
                wire = Interrupting(self.redis, command)
                with self.assertRaises(KeyboardInterrupt):
                    call(Prepkey(wire))
                self.assertIn(b"PK.ROLLBACK", wire.names())
        for key in ("p", "m1", "m2", "u"):
            self.assertIsNone(self.pk.get_value(ns, key), key)
        self.assertIs(self.pk.prepare(ns, "old", "cmd-0"), True)
        wire = Interrupting(self.redis, b"PK.REPREPARE")
        with self.assertRaises(KeyboardInterrupt):
            Prepkey(wire).change_key(ns, "old", "cmd-0", "new", "cmd-1")
        self.assertEqual(self.pk.get_value(ns, "old"), Record(b"cmd-0", None))
        self.assertIsNone(self.pk.get_value(ns, "new"))

    def test_outcome_unknown_on_real_errors(self) -> None:
        down = Prepkey(redis.Redis(**client_kwargs(self.protocol, port=self.env.unavailable_port)))
        self.addCleanup(down.client.close)  # type: ignore[attr-defined]
        with self.assertRaises(UnavailableError) as unavailable:
            down.prepare(self.ns, "k", "v")
        self.assertTrue(outcome_unknown(unavailable.exception))
        nowhere = redis.Redis(**client_kwargs(self.protocol, port=closed_port(), retry=Retry(NoBackoff(), 0)))
        self.addCleanup(nowhere.close)
        with self.assertRaises(redis.ConnectionError) as refused:
            Prepkey(nowhere).prepare(self.ns, "k", "v")
        self.assertTrue(outcome_unknown(refused.exception))
        self.proxy.rule("drop_reply", b"PK.PREPARE")
        with self.assertRaises(redis.ConnectionError) as lost:
            self.via_proxy(retry=Retry(NoBackoff(), 0)).prepare(self.ns, "k", "v")
        self.assertTrue(outcome_unknown(lost.exception))
        self.assertIs(self.pk.prepare(self.ns, "k", "v"), False)  # it did take effect
        with self.assertRaises(redis.ResponseError) as answered:
            self.pk.change_key(self.ns, "nobody", "v", "k2", "v")
        self.assertFalse(outcome_unknown(answered.exception))
        wrong = redis.Redis(**client_kwargs(self.protocol, password="wrong-password"))
        self.addCleanup(wrong.close)
        with self.assertRaises(redis.RedisError) as auth:
            Prepkey(wrong).prepare(self.ns, "k", "v")
        self.assertFalse(outcome_unknown(auth.exception), repr(auth.exception))


class AsyncCases(_AsyncBase):
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
        self.pk = AsyncPrepkey(self.redis)
        self.proxy = Proxy(self.env.host, self.env.port)
        self.addCleanup(self.proxy.close)
        self.ns = unique("pyr")

    def via_proxy(self, **extra: Any) -> AsyncPrepkey:
        client: Any = redis.asyncio.Redis(
            **client_kwargs(self.protocol, port=self.proxy.port, host="127.0.0.1", **extra)
        )
        self.addAsyncCleanup(aclose, client)
        return AsyncPrepkey(client, settle_timeout=SETTLE)

    async def cancel_when(self, rule: Any, coro: Any, release: bool) -> None:
        """Runs ``coro`` in a task, cancels it once the proxy reached
        ``rule``, releases the proxy's holds if ``release`` (the reply then
        arrives while the helper cleans up; otherwise the helper's settle
        bound runs out), and checks that the task ends cancelled."""
        task = asyncio.ensure_future(coro)
        await wait_event(rule.reached, DEADLINE_SECONDS)
        task.cancel()
        if release:
            self.proxy.release()
        with self.assertRaises(asyncio.CancelledError):
            await asyncio.wait_for(task, DEADLINE_SECONDS)

    async def using(self, pk: AsyncPrepkey, key: str, value: str, ran: List[bool], fail: bool = False) -> None:
        async with pk.using_prepare(self.ns, key, value) as prepared:
            ran.append(prepared)
            if fail:
                raise RuntimeError("the event was not emitted")

    # --- cancellation at each await point -----------------------------------

    async def test_cancel_while_connecting(self) -> None:
        """Cancelled during the connection's AUTH/HELLO: nothing was sent."""
        rule = self.proxy.rule("hold_reply", b"*")
        ran: List[bool] = []
        await self.cancel_when(rule, self.using(self.via_proxy(), "alice", "cmd-1", ran), release=False)
        self.assertNotIn(b"PK.PREPARE", self.proxy.seen)
        self.assertEqual(ran, [])
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    async def test_cancel_while_the_prepare_is_in_flight(self) -> None:
        """Cancelled with the PREPARE sent (held before or after the sidecar
        ran it; the reply let through during the clean-up, or never): the
        block does not run and no record of ours is left."""
        for action in ("hold_request", "hold_reply"):
            for release in (True, False):
                with self.subTest(action=action, release=release):
                    key = f"{action}-{release}"
                    self.proxy = Proxy(self.env.host, self.env.port)
                    self.addCleanup(self.proxy.close)
                    rule = self.proxy.rule(action, b"PK.PREPARE")
                    ran: List[bool] = []
                    await self.cancel_when(rule, self.using(self.via_proxy(), key, "cmd-1", ran), release)
                    self.assertEqual(ran, [])
                    self.assertIsNone(await self.pk.get_value(self.ns, key))
                    if action == "hold_request" and not release:
                        self.assertEqual(self.proxy.dropped_requests, 1)

    async def test_cancel_while_reading_after_a_zero(self) -> None:
        """The PREPARE answered 0 and the record holds our value (what a
        resend looks like); cancelled during the GETVALUE: released."""
        self.assertIs(await self.pk.prepare(self.ns, "alice", "cmd-1"), True)
        rule = self.proxy.rule("hold_reply", b"PK.GETVALUE")
        ran: List[bool] = []
        await self.cancel_when(rule, self.using(self.via_proxy(), "alice", "cmd-1", ran), release=False)
        self.assertEqual(ran, [])
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    async def test_cancel_while_reading_after_a_lost_reply(self) -> None:
        """The PREPARE's reply is lost (ConnectionError, no retries: outcome
        unknown); cancelled during the GETVALUE that follows: the
        CancelledError (not the ConnectionError) propagates, and the
        reservation the PREPARE made is released."""
        self.proxy.rule("drop_reply", b"PK.PREPARE")
        rule = self.proxy.rule("hold_reply", b"PK.GETVALUE")
        ran: List[bool] = []
        pk = self.via_proxy(retry=AsyncRetry(NoBackoff(), 0))
        await self.cancel_when(rule, self.using(pk, "alice", "cmd-1", ran), release=False)
        self.assertEqual(ran, [])
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    async def test_cancel_during_the_rollback(self) -> None:
        """The block failed and its ROLLBACK is in flight when the task is
        cancelled: the rollback still happens."""
        for release in (True, False):
            with self.subTest(release=release):
                key = f"alice-{release}"
                rule = self.proxy.rule("hold_request", b"PK.ROLLBACK")
                ran: List[bool] = []
                await self.cancel_when(rule, self.using(self.via_proxy(), key, "cmd-1", ran, fail=True), release)
                self.assertEqual(ran, [True])
                self.assertIsNone(await self.pk.get_value(self.ns, key))
                self.proxy.release()

    async def test_cancel_each_reserving_call(self) -> None:
        """prepare, mprepare, change_key cancelled with their reply held
        (executed by the sidecar): undone before CancelledError; reprepare:
        settled (the reply came) before CancelledError, not undone."""
        ns = self.ns
        self.assertIs(await self.pk.prepare(ns, "old", "cmd-0"), True)
        self.assertIs(await self.pk.prepare(ns, "r", "cmd-0"), True)
        cases: List[Any] = [
            (b"PK.PREPARE", lambda pk: pk.prepare(ns, "p", "cmd-1", ttl=timedelta(minutes=5))),
            (b"PK.MPREPARE", lambda pk: pk.mprepare([(ns, "m1", "cmd-1"), (ns, "m2", "cmd-1")])),
            (b"PK.REPREPARE", lambda pk: pk.change_key(ns, "old", "cmd-0", "new", "cmd-1")),
        ]
        for command, call in cases:
            for release in (True, False):
                with self.subTest(command=command, release=release):
                    rule = self.proxy.rule("hold_reply", command)
                    await self.cancel_when(rule, call(self.via_proxy()), release)
                    self.proxy = Proxy(self.env.host, self.env.port)
                    self.addCleanup(self.proxy.close)
        for key in ("p", "m1", "m2", "new"):
            self.assertIsNone(await self.pk.get_value(ns, key), key)
        self.assertEqual(await self.pk.get_value(ns, "old"), Record(b"cmd-0", None))
        rule = self.proxy.rule("hold_reply", b"PK.REPREPARE")
        pk = self.via_proxy()
        await self.cancel_when(rule, pk.reprepare(ns, "r", "cmd-1", if_eq="cmd-0"), release=True)
        self.assertEqual(await self.pk.get_value(ns, "r"), Record(b"cmd-1", None))

    async def test_a_second_cancellation_does_not_stop_the_clean_up(self) -> None:
        """Cancelled twice: the second CancelledError goes through at once,
        the clean-up finishes in the background."""
        rule = self.proxy.rule("hold_reply", b"PK.PREPARE")
        pk = self.via_proxy()
        task = asyncio.ensure_future(pk.prepare(self.ns, "alice", "cmd-1"))
        await wait_event(rule.reached, DEADLINE_SECONDS)
        task.cancel()
        await asyncio.sleep(0)  # the task is now in its clean-up
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.proxy.release()
        await asyncio.wait_for(asyncio.gather(*pk._cleanups), DEADLINE_SECONDS)
        self.assertIsNone(await self.pk.get_value(self.ns, "alice"))

    # --- resends -------------------------------------------------------------

    async def test_resent_prepare_is_ours(self) -> None:
        for body_fails in (False, True):
            with self.subTest(body_fails=body_fails):
                key = f"alice-{body_fails}"
                self.proxy.seen.clear()
                self.proxy.rule("drop_reply", b"PK.PREPARE")
                pk = self.via_proxy(**recommended(AsyncRetry))
                ran: List[bool] = []
                try:
                    await self.using(pk, key, "cmd-1", ran, fail=body_fails)
                except RuntimeError:
                    self.assertTrue(body_fails)
                self.assertEqual(self.proxy.seen.count(b"PK.PREPARE"), 2, "redis-py resent it")
                self.assertEqual(ran, [True])
                expected = None if body_fails else Record(b"cmd-1", None)
                self.assertEqual(await self.pk.get_value(self.ns, key), expected)

    async def test_lost_reply_with_redis_py_defaults(self) -> None:
        self.proxy.rule("drop_reply", b"PK.PREPARE")
        ran: List[bool] = []
        await self.using(self.via_proxy(), "alice", "cmd-1", ran)
        self.assertEqual(ran, [True])
        self.assertEqual(await self.pk.get_value(self.ns, "alice"), Record(b"cmd-1", None))


class SyncResp2Tests(SyncCases, unittest.TestCase):
    protocol = 2


class SyncResp3Tests(SyncCases, unittest.TestCase):
    protocol = 3


class AsyncResp2Tests(AsyncCases, unittest.IsolatedAsyncioTestCase):
    protocol = 2


class AsyncResp3Tests(AsyncCases, unittest.IsolatedAsyncioTestCase):
    protocol = 3


if __name__ == "__main__":
    unittest.main()
