"""The asyncio client: PK commands over a ``redis.asyncio.Redis``.

The same operations, arguments, replies and errors as the sync ``Prepkey``
(see its docstrings); each method is a coroutine, ``scan`` an async iterator
and ``using_prepare`` an async context manager.

Cancellation: a ``prepare``, ``mprepare``, ``change_key`` or ``reprepare``
cancelled after its command may have been sent does not leave its outcome
unknown. The command runs in a task of its own that the cancellation does not
reach (``asyncio.shield``); the helper waits for its reply (at most
``settle_timeout``), then undoes what it may have reserved: ``GETVALUE``, and
a record holding exactly the call's value is released with ``ROLLBACK ...
IFEQ`` (``change_key``: moved back; ``reprepare``, which only changes a
record the caller already held, is only waited for). Only then does the
CancelledError propagate. That clean-up is itself shielded: a second
cancellation lets the CancelledError through at once while the clean-up
finishes in the background, bounded by ``cleanup_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    AsyncContextManager,
    Callable,
    Iterable,
    Optional,
    Protocol,
    Set,
    TYPE_CHECKING,
    Type,
    TypeVar,
)

from redis.exceptions import ResponseError

from . import _core
from ._core import Data, Entry, Record, ScanRecord, TTL
from .client import NEVER_DECODE
from .errors import from_response_error, outcome_unknown

if TYPE_CHECKING:
    from .codec import Codec
    from .key import AsyncKey

__all__ = ["AsyncPrepkey", "AsyncClient"]

T = TypeVar("T")


class AsyncClient(Protocol):
    """What AsyncPrepkey needs of its client: ``redis.asyncio.Redis``'s
    ``execute_command`` (see ``SyncClient`` for why not a cluster client)."""

    def execute_command(self, *args: Any, **options: Any) -> Awaitable[Any]: ...


class AsyncPrepkey:
    """The PK commands of a prepkey sidecar over ``redis.asyncio``.

    Identical in behaviour to ``Prepkey``: bytes back, argument errors
    (TypeError, ValueError) before anything is sent, ``UnavailableError``,
    ``MismatchError``, ``PrepkeyError`` for error replies, transport errors
    passed through, never False for a failure; cancellation as the module
    says. ``settle_timeout`` bounds how long a cancelled call waits for the
    reply in flight, ``cleanup_timeout`` the GETVALUE and ROLLBACK after it
    (the client's own retries included).

    ``aclose()`` closes only a client the helper opened (``from_url``).
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        settle_timeout: timedelta = timedelta(seconds=5),
        cleanup_timeout: timedelta = timedelta(seconds=5),
    ) -> None:
        for what, t in (("settle_timeout", settle_timeout), ("cleanup_timeout", cleanup_timeout)):
            if not isinstance(t, timedelta):
                raise TypeError(f"{what} must be a timedelta, not {type(t).__name__}")
            if t <= timedelta(0):
                raise ValueError(f"{what} must be positive, got {t}")
        self._client = client
        self._owns_client = False
        self._settle = settle_timeout.total_seconds()
        self._cleanup = cleanup_timeout.total_seconds()
        # Clean-ups that a second cancellation left running: referenced until
        # done, so that the event loop does not drop them.
        self._cleanups: Set["asyncio.Future[None]"] = set()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "AsyncPrepkey":
        """An AsyncPrepkey over ``redis.asyncio.Redis.from_url(url, **kwargs)``;
        ``aclose()`` closes that client."""
        import redis.asyncio

        pk = cls(redis.asyncio.Redis.from_url(url, **kwargs))
        pk._owns_client = True
        return pk

    @property
    def client(self) -> AsyncClient:
        """The redis-py client the commands go through."""
        return self._client

    async def aclose(self) -> None:
        """Close the client if this helper opened it (``from_url``); a client
        given to the constructor is left open."""
        if not self._owns_client:
            return
        # redis-py 5.0.1 renamed close() to aclose(); 4.x has only close().
        close = getattr(self._client, "aclose", None) or getattr(self._client, "close", None)
        if close is not None:
            await close()
        # redis-py before 5 does not close the pool of a client made by
        # from_url (auto_close_connection_pool is False there); it is ours.
        pool = getattr(self._client, "connection_pool", None)
        if pool is not None:
            await pool.disconnect()

    async def __aenter__(self) -> "AsyncPrepkey":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    def key(self, name: Data, codec: Optional["Codec[Any]"] = None) -> "AsyncKey[Any]":
        """A handle bound to namespace ``name`` with typed values (see
        ``Prepkey.key``)."""
        from .key import AsyncKey

        return AsyncKey(self, name, codec)

    async def _run(self, command: _core.Command[T]) -> T:
        try:
            reply = await self._client.execute_command(*command.args, **{NEVER_DECODE: []})
        except ResponseError as err:
            raise from_response_error(err) from err
        return command.parse(reply)

    async def _shielded(self, command: _core.Command[T], undo: Callable[[], Awaitable[None]]) -> T:
        """``command`` in a task a cancellation does not reach; cancelled, the
        task is left to settle and ``undo`` runs before CancelledError goes on."""
        task = asyncio.ensure_future(self._run(command))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await self._settle_then(task, undo)
            raise

    async def _settle_then(self, task: "Optional[asyncio.Future[Any]]", undo: Callable[[], Awaitable[None]]) -> None:
        """After a cancellation: wait for ``task`` (the command in flight; at
        most settle_timeout, then it is cancelled and its connection dropped),
        then ``undo`` (at most cleanup_timeout). Shielded; errors of the
        clean-up are swallowed, as the caller's error is the one to see."""
        settle, cleanup = self._settle, self._cleanup

        async def clean() -> None:
            if task is not None:
                if not task.done():
                    done, _ = await asyncio.wait({task}, timeout=settle)
                    if not done:
                        task.cancel()
                        await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # retrieved: its error is not the caller's
            await asyncio.wait_for(undo(), cleanup)

        job = asyncio.ensure_future(clean())
        self._cleanups.add(job)
        job.add_done_callback(self._cleanups.discard)
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:
            raise  # cancelled again: the job finishes in the background
        except Exception:
            pass  # best effort (the backend is down, say): the record may stay held

    async def _release(self, name: bytes, key: bytes, value: bytes) -> None:
        """Release ``key`` if its record holds exactly ``value`` (ours)."""
        record = await self.get_value(name, key)
        if record is not None and record.value == value:
            await self.rollback_if_eq(name, key, value)

    async def _move_back(self, name: bytes, old_key: bytes, old_value: bytes, new_key: bytes, new_value: bytes) -> None:
        record = await self.get_value(name, new_key)
        if record is not None and record.value == new_value:
            await self._run(_core.change_key(name, new_key, new_value, old_key, old_value, ()))

    async def _nothing(self) -> None:
        pass

    async def prepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """PK.PREPARE: True reserved, False a live record holds the key.
        Cancelled: nothing of this call is left reserved."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        n, k, v = _core.namespace(name), _core.key(key), _core.value(value)
        return await self._shielded(_core.prepare(n, k, v, words), lambda: self._release(n, k, v))

    async def get(self, name: Data, key: Data) -> Optional[bytes]:
        """PK.GET: the live record's value, or None."""
        return await self._run(_core.get(name, key))

    async def get_value(self, name: Data, key: Data) -> Optional[Record]:
        """PK.GETVALUE: the record, live or expired but retained, or None."""
        return await self._run(_core.get_value(name, key))

    async def rollback(self, name: Data, key: Data) -> bool:
        """PK.ROLLBACK: True deleted, False no record."""
        return await self._run(_core.rollback(name, key))

    async def rollback_if_eq(self, name: Data, key: Data, value: Data) -> bool:
        """PK.ROLLBACK IFEQ: True deleted, False no record or another value."""
        return await self._run(_core.rollback_if_eq(name, key, value))

    async def reprepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        *,
        if_eq: Optional[Data] = None,
        keep_ttl: bool = False,
        ttl: Optional[TTL] = None,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """PK.REPREPARE: True replaced, False no live record or another value.
        Cancelled: settled (waited for), not undone."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return await self._shielded(_core.reprepare(name, key, value, if_eq, keep_ttl, words), self._nothing)

    async def change_key(
        self,
        name: Data,
        old_key: Data,
        old_value: Data,
        new_key: Data,
        new_value: Data,
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """PK.REPREPARE ... FROM: True moved, False ``new_key`` held,
        MismatchError ``old_key`` does not hold ``old_value``. Cancelled: moved
        back (forever) if it had moved."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        command = _core.change_key(name, old_key, old_value, new_key, new_value, words)
        n, ok, ov = _core.namespace(name), _core.key(old_key), _core.value(old_value)
        nk, nv = _core.key(new_key), _core.value(new_value)
        return await self._shielded(command, lambda: self._move_back(n, ok, ov, nk, nv))

    async def mprepare(
        self,
        entries: Iterable[Entry],
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """PK.MPREPARE: True all reserved, False none (one was held).
        Cancelled: none of this call's entries is left reserved."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        checked = _core.entries(entries)

        async def undo() -> None:
            for n, k, v in checked:
                await self._release(n, k, v)

        return await self._shielded(_core.mprepare(checked, words), undo)

    def scan(
        self,
        name: Data,
        *,
        match: Optional[Data] = None,
        count: Optional[int] = None,
        live: bool = False,
        expired: bool = False,
    ) -> AsyncIterator[ScanRecord]:
        """PK.SCAN as an async iterator (``async for record in pk.scan(...)``),
        following the cursor until ``0``. Arguments are checked now."""
        options = _core.scan_options(name, match, count, live, expired)
        return self._scan_pages(options)

    async def _scan_pages(self, options: _core.ScanOptions) -> AsyncIterator[ScanRecord]:
        cursor = _core.SCAN_START
        while True:
            cursor, records = await self._run(options.page(cursor))
            for record in records:
                yield record
            if cursor == _core.SCAN_START:
                return

    async def _acquire(self, n: bytes, k: bytes, v: bytes, words: _core.Words) -> bool:
        """``Prepkey._acquire``, cancellation-safe at each await."""
        undo = lambda: self._release(n, k, v)  # noqa: E731
        failure: Optional[BaseException] = None
        try:
            if await self._shielded(_core.prepare(n, k, v, words), undo):
                return True
        except asyncio.CancelledError:
            raise  # _shielded undid it
        except Exception as err:
            if not outcome_unknown(err):
                raise
            failure = err
        try:
            record = await self.get_value(n, k)
        except BaseException as read_error:
            # Cancelled, or the read failed: what may be ours is released.
            await self._settle_then(None, undo)
            if failure is not None and isinstance(read_error, Exception):
                raise failure  # the prepare's error; a cancellation goes on as itself
            raise
        if record is not None and record.value == v:
            return True
        if failure is not None:
            raise failure
        return False

    async def _rollback_after(self, n: bytes, k: bytes, v: bytes) -> None:
        """The block failed: ROLLBACK IFEQ, finished even if cancelled meanwhile."""
        await self._shielded(_core.rollback_if_eq(n, k, v), lambda: self._release(n, k, v))

    def using_prepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> AsyncContextManager[bool]:
        """``async with pk.using_prepare(name, key, value) as prepared:``, with
        the semantics of ``Prepkey.using_prepare`` (resend rule included). A
        cancellation of the block counts as its failure: the reservation is
        rolled back (awaited, and shielded from a further cancellation) before
        the CancelledError propagates; a cancellation while the prepare or
        the read after it is in flight leaves nothing of ours held."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return self._using(name, key, value, words)

    @contextlib.asynccontextmanager
    async def _using(self, name: Data, key: Data, value: Data, words: _core.Words) -> AsyncIterator[bool]:
        n, k, v = _core.namespace(name), _core.key(key), _core.value(value)
        if not await self._acquire(n, k, v, words):
            yield False
            return
        try:
            yield True
        except BaseException as body_error:
            try:
                await self._rollback_after(n, k, v)
            except BaseException as rollback_error:
                raise rollback_error from body_error
            raise

    async def run_prepared(
        self,
        name: Data,
        key: Data,
        value: Data,
        body: Callable[[bool], Awaitable[T]],
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> T:
        """``using_prepare`` as a call: ``await body(prepared)``'s result, with
        the same rollback on its exception."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        async with self._using(name, key, value, words) as prepared:
            return await body(prepared)
