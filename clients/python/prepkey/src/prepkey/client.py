"""The synchronous client: PK commands over a ``redis.Redis``."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol, Type, TypeVar

from redis.exceptions import ResponseError

from . import _core
from ._core import Data, Entry, Record, ScanRecord, TTL
from .errors import from_response_error

__all__ = ["Prepkey", "SyncClient"]

T = TypeVar("T")

#: redis-py's option that makes it hand back bulk strings as bytes even on a
#: client made with ``decode_responses=True`` (redis.client.NEVER_DECODE, in
#: every redis-py from 4.1 on).
NEVER_DECODE = "NEVER_DECODE"


class SyncClient(Protocol):
    """What Prepkey needs of its client: redis-py's ``execute_command``, as
    ``redis.Redis`` has it (a wrapper with the same method will do).

    Not ``RedisCluster``: a sidecar is one endpoint and does not answer
    ``CLUSTER SLOTS``, so redis-py's cluster client cannot start on it (the
    sidecar's own backend may be a Redis Cluster; that is the sidecar's
    business). Sentinel does not apply either: sidecars are not Redis
    replicas that Sentinel could monitor.
    """

    def execute_command(self, *args: Any, **options: Any) -> Any: ...


class Prepkey:
    """The PK commands of a prepkey sidecar, typed, over a redis-py client.

    Keys, values and namespaces are ``str`` (sent as UTF-8) or bytes; what
    comes back is always ``bytes``, whatever the client's
    ``decode_responses``. Every method checks its arguments before sending
    anything: a wrong type is a TypeError, a value the protocol refuses for
    every sidecar (an empty key, a namespace outside ``A-Z a-z 0-9 _ . -``) a
    ValueError.

    Errors: ``UnavailableError`` when the sidecar's backend failed (the outcome
    is unknown: check with ``get_value`` before retrying), ``MismatchError``
    for a key change whose old key does not hold the old value, a
    ``PrepkeyError`` with the sidecar's text for any other error reply.
    Transport errors (``redis.ConnectionError``, ``redis.TimeoutError``) pass
    through; after one the outcome is unknown too. A failure is never False.
    """

    def __init__(self, client: SyncClient) -> None:
        self._client = client

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "Prepkey":
        """A Prepkey over ``redis.Redis.from_url(url, **kwargs)``, e.g.
        ``redis://:password@127.0.0.1:6380``."""
        import redis

        return cls(redis.Redis.from_url(url, **kwargs))

    @property
    def client(self) -> SyncClient:
        """The redis-py client the commands go through."""
        return self._client

    def close(self) -> None:
        """Close the client (also one given to the constructor)."""
        close = getattr(self._client, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> "Prepkey":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _run(self, command: _core.Command[T]) -> T:
        try:
            reply = self._client.execute_command(*command.args, **{NEVER_DECODE: []})
        except ResponseError as err:
            raise from_response_error(err) from err
        return command.parse(reply)

    def prepare(self, name: Data, key: Data, value: Data, ttl: Optional[TTL] = None) -> bool:
        """Reserve ``key`` for ``value`` (PK.PREPARE): True reserved, False a
        live record holds the key (whatever its value; nothing changed).

        ``ttl``: a ``timedelta`` (PX), an aware ``datetime`` (PXAT), int
        seconds (EX); None: forever.
        """
        return self._run(_core.prepare(name, key, value, ttl))

    def get(self, name: Data, key: Data) -> Optional[bytes]:
        """The value of the live record of ``key`` (PK.GET); None when there
        is none or it expired."""
        return self._run(_core.get(name, key))

    def get_value(self, name: Data, key: Data) -> Optional[Record]:
        """The record of ``key``, live or expired but retained (PK.GETVALUE);
        None when there is none. Use it to reconcile after UnavailableError."""
        return self._run(_core.get_value(name, key))

    def rollback(self, name: Data, key: Data) -> bool:
        """Delete the record of ``key``, whatever its value (PK.ROLLBACK):
        True deleted, False no record."""
        return self._run(_core.rollback(name, key))

    def rollback_if_eq(self, name: Data, key: Data, value: Data) -> bool:
        """Delete the record of ``key`` only if it holds ``value`` (PK.ROLLBACK
        IFEQ): True deleted, False no record or another value. This is how a
        failed operation releases only its own reservation."""
        return self._run(_core.rollback_if_eq(name, key, value))

    def reprepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        *,
        if_eq: Optional[Data] = None,
        keep_ttl: bool = False,
        ttl: Optional[TTL] = None,
    ) -> bool:
        """Replace the value of the live record of ``key`` (PK.REPREPARE):
        True replaced, False no live record or (with ``if_eq``) another value.

        The new record is forever unless ``ttl`` is given; ``keep_ttl=True``
        keeps its expiry instead.
        """
        return self._run(_core.reprepare(name, key, value, if_eq, keep_ttl, ttl))

    def change_key(
        self,
        name: Data,
        old_key: Data,
        old_value: Data,
        new_key: Data,
        new_value: Data,
        ttl: Optional[TTL] = None,
    ) -> bool:
        """Move a reservation from ``old_key`` to ``new_key`` (PK.REPREPARE ...
        FROM old_key IFEQ old_value), e.g. a username change, never half done.

        True: ``new_key`` reserved for ``new_value``, ``old_key`` released.
        False: a live record holds ``new_key``; nothing changed.
        MismatchError: ``old_key`` has no record holding ``old_value``; nothing
        changed.
        """
        return self._run(_core.change_key(name, old_key, old_value, new_key, new_value, ttl))

    def mprepare(self, entries: Iterable[Entry], ttl: Optional[TTL] = None) -> bool:
        """Reserve 1 to 64 ``(namespace, key, value)`` entries, all or none
        (PK.MPREPARE): True all reserved, False at least one key is held
        (nothing changed). ``ttl`` applies to every entry, one expiry for all."""
        return self._run(_core.mprepare(entries, ttl))

    def scan(
        self,
        name: Data,
        *,
        match: Optional[Data] = None,
        count: Optional[int] = None,
        live: bool = False,
        expired: bool = False,
    ) -> Iterator[ScanRecord]:
        """The records of namespace ``name`` (PK.SCAN), following the cursor
        page by page until the sidecar returns ``0``.

        ``match``: a Redis glob on keys; ``count``: the work per call (1 to
        1000); ``live`` / ``expired``: only those (neither: both). A record
        may come twice; every record present and unchanged for the whole
        iteration comes at least once. Arguments are checked now, commands are
        sent as the iterator is consumed.
        """
        options = _core.scan_options(name, match, count, live, expired)
        return self._scan_pages(options)

    def _scan_pages(self, options: _core.ScanOptions) -> Iterator[ScanRecord]:
        cursor = _core.SCAN_START
        while True:
            cursor, records = self._run(options.page(cursor))
            yield from records
            if cursor == _core.SCAN_START:
                return

    @contextlib.contextmanager
    def using_prepare(
        self, name: Data, key: Data, value: Data, ttl: Optional[TTL] = None
    ) -> Iterator[bool]:
        """Prepare ``key``, run the with-block, roll back only if it fails::

            with pk.using_prepare("username", "alice", user_id) as prepared:
                if not prepared:
                    raise UsernameTaken("alice")
                emit_event(...)

        - The block runs with ``prepared`` True (reserved) or False (held by a
          live record); on False nothing is ever rolled back.
        - Prepared and the block raises: ``PK.ROLLBACK name key IFEQ value``
          (only this reservation; a rollback answering False is fine), then
          the block's exception propagates.
        - ... and the rollback itself raises: its exception propagates, raised
          ``from`` the block's (``__cause__``).
        - The prepare raises (UnavailableError, a transport error): the block
          does not run.
        """
        prepared = self.prepare(name, key, value, ttl)
        if not prepared:
            yield False
            return
        try:
            yield True
        except BaseException as body_error:
            # BaseException: a KeyboardInterrupt or a cancellation in the
            # block leaves it undone too, so its reservation goes.
            try:
                self.rollback_if_eq(name, key, value)
            except BaseException as rollback_error:
                raise rollback_error from body_error
            raise

    def run_prepared(
        self,
        name: Data,
        key: Data,
        value: Data,
        body: Callable[[bool], T],
        ttl: Optional[TTL] = None,
    ) -> T:
        """``using_prepare`` as a call: ``body(prepared)``'s result, with the
        same rollback on its exception."""
        with self.using_prepare(name, key, value, ttl) as prepared:
            return body(prepared)
