"""The asyncio client: PK commands over a ``redis.asyncio.Redis``.

The same operations, arguments, replies and errors as the sync ``Prepkey``
(see its docstrings); each method is a coroutine, ``scan`` an async iterator
and ``using_prepare`` an async context manager.
"""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Optional,
    Protocol,
    Type,
    TypeVar,
)

from redis.exceptions import ResponseError

from . import _core
from ._core import Data, Entry, Record, ScanRecord, TTL
from .client import NEVER_DECODE
from .errors import from_response_error

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
    passed through, never False for a failure.
    """

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "AsyncPrepkey":
        """An AsyncPrepkey over ``redis.asyncio.Redis.from_url(url, **kwargs)``."""
        import redis.asyncio

        return cls(redis.asyncio.Redis.from_url(url, **kwargs))

    @property
    def client(self) -> AsyncClient:
        """The redis-py client the commands go through."""
        return self._client

    async def aclose(self) -> None:
        """Close the client (also one given to the constructor)."""
        # redis-py 5.0.1 renamed close() to aclose(); 4.x has only close().
        close = getattr(self._client, "aclose", None) or getattr(self._client, "close", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> "AsyncPrepkey":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def _run(self, command: _core.Command[T]) -> T:
        try:
            reply = await self._client.execute_command(*command.args, **{NEVER_DECODE: []})
        except ResponseError as err:
            raise from_response_error(err) from err
        return command.parse(reply)

    async def prepare(self, name: Data, key: Data, value: Data, ttl: Optional[TTL] = None) -> bool:
        """PK.PREPARE: True reserved, False a live record holds the key."""
        return await self._run(_core.prepare(name, key, value, ttl))

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
    ) -> bool:
        """PK.REPREPARE: True replaced, False no live record or another value."""
        return await self._run(_core.reprepare(name, key, value, if_eq, keep_ttl, ttl))

    async def change_key(
        self,
        name: Data,
        old_key: Data,
        old_value: Data,
        new_key: Data,
        new_value: Data,
        ttl: Optional[TTL] = None,
    ) -> bool:
        """PK.REPREPARE ... FROM: True moved, False ``new_key`` held,
        MismatchError ``old_key`` does not hold ``old_value``."""
        return await self._run(_core.change_key(name, old_key, old_value, new_key, new_value, ttl))

    async def mprepare(self, entries: Iterable[Entry], ttl: Optional[TTL] = None) -> bool:
        """PK.MPREPARE: True all reserved, False none (one was held)."""
        return await self._run(_core.mprepare(entries, ttl))

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

    @contextlib.asynccontextmanager
    async def using_prepare(
        self, name: Data, key: Data, value: Data, ttl: Optional[TTL] = None
    ) -> AsyncIterator[bool]:
        """``async with pk.using_prepare(name, key, value) as prepared:``, with
        the semantics of ``Prepkey.using_prepare``. A cancellation of the
        block counts as its failure: the reservation is rolled back (awaited)
        before the CancelledError propagates."""
        prepared = await self.prepare(name, key, value, ttl)
        if not prepared:
            yield False
            return
        try:
            yield True
        except BaseException as body_error:
            try:
                await self.rollback_if_eq(name, key, value)
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
    ) -> T:
        """``using_prepare`` as a call: ``await body(prepared)``'s result, with
        the same rollback on its exception."""
        async with self.using_prepare(name, key, value, ttl) as prepared:
            return await body(prepared)
