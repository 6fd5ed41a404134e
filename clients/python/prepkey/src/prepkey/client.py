"""The synchronous client: PK commands over a ``redis.Redis``."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Iterator, Optional, Protocol, Type, TypeVar

from redis.exceptions import ResponseError

from . import _core
from ._core import Data, Entry, Record, ScanRecord, TTL
from .errors import from_response_error, outcome_unknown

if TYPE_CHECKING:
    from .codec import Codec
    from .key import Key

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
    through; after one the outcome is unknown too (``outcome_unknown(err)``).
    A failure is never False.

    Interrupted (``KeyboardInterrupt``, or any other ``BaseException`` that
    is not an ``Exception``) while a ``prepare``, ``mprepare`` or
    ``change_key`` may have been sent, the helper first undoes what that call
    may have done (a record holding the call's own value is released; a moved
    key is moved back), then lets the interrupt propagate.

    The client given stays the caller's: ``close()`` closes only a client
    the helper opened itself (``from_url``).
    """

    def __init__(self, client: SyncClient) -> None:
        self._client = client
        self._owns_client = False

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "Prepkey":
        """A Prepkey over ``redis.Redis.from_url(url, **kwargs)``, e.g.
        ``redis://:password@127.0.0.1:6380``; ``close()`` closes that client."""
        import redis

        pk = cls(redis.Redis.from_url(url, **kwargs))
        pk._owns_client = True
        return pk

    @property
    def client(self) -> SyncClient:
        """The redis-py client the commands go through."""
        return self._client

    def close(self) -> None:
        """Close the client if this helper opened it (``from_url``); a client
        given to the constructor is left open: whoever made it closes it."""
        if not self._owns_client:
            return
        close = getattr(self._client, "close", None)
        if close is not None:
            close()
        # redis-py before 5 does not close the pool of a client made by
        # from_url (auto_close_connection_pool is False there); it is ours.
        pool = getattr(self._client, "connection_pool", None)
        if pool is not None:
            pool.disconnect()

    def __enter__(self) -> "Prepkey":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def key(self, name: Data, codec: Optional["Codec[Any]"] = None) -> "Key[Any]":
        """A handle bound to namespace ``name`` whose values are typed, encoded
        by ``codec`` (default: ``JacksonJson()``, the bytes Wow's Jackson
        writes). See ``prepkey.Key``."""
        from .key import Key

        return Key(self, name, codec)

    def _run(self, command: _core.Command[T]) -> T:
        try:
            reply = self._client.execute_command(*command.args, **{NEVER_DECODE: []})
        except ResponseError as err:
            raise from_response_error(err) from err
        return command.parse(reply)

    def _interruptible(self, command: _core.Command[T], undo: Callable[[], None]) -> T:
        """``command``; if an interrupt (not an Exception) stops it after it may
        have been sent, ``undo`` runs (best effort) before the interrupt goes on."""
        try:
            return self._run(command)
        except Exception:
            raise
        except BaseException:
            try:
                undo()
            except Exception:
                pass  # best effort: the interrupt is what the caller must see
            raise

    def _release(self, name: bytes, key: bytes, value: bytes) -> None:
        """Release ``key`` if its record holds exactly ``value`` (ours)."""
        record = self.get_value(name, key)
        if record is not None and record.value == value:
            self.rollback_if_eq(name, key, value)

    def _move_back(self, name: bytes, old_key: bytes, old_value: bytes, new_key: bytes, new_value: bytes) -> None:
        """Undo a change_key that may have happened: move ``new_key`` (if it
        holds ``new_value``) back to ``old_key``, forever."""
        record = self.get_value(name, new_key)
        if record is not None and record.value == new_value:
            self._run(_core.change_key(name, new_key, new_value, old_key, old_value, ()))

    def prepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """Reserve ``key`` for ``value`` (PK.PREPARE): True reserved, False a
        live record holds the key (whatever its value; nothing changed).

        ``ttl``: a ``timedelta`` (PX) or an aware ``datetime`` (PXAT);
        ``ttl_ms`` (PX) or ``ttl_s`` (EX) for a number with its unit; none of
        them: forever. A bare number as ``ttl`` is seconds, deprecated.
        """
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        n, k, v = _core.namespace(name), _core.key(key), _core.value(value)
        return self._interruptible(_core.prepare(n, k, v, words), lambda: self._release(n, k, v))

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
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """Replace the value of the live record of ``key`` (PK.REPREPARE):
        True replaced, False no live record or (with ``if_eq``) another value.

        The new record is forever unless a TTL is given; ``keep_ttl=True``
        keeps its expiry instead. It changes a record the caller already
        holds, so an interrupt is not undone (nothing new can be left held).
        """
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return self._run(_core.reprepare(name, key, value, if_eq, keep_ttl, words))

    def change_key(
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
        """Move a reservation from ``old_key`` to ``new_key`` (PK.REPREPARE ...
        FROM old_key IFEQ old_value), e.g. a username change, never half done.

        True: ``new_key`` reserved for ``new_value``, ``old_key`` released.
        False: a live record holds ``new_key``; nothing changed.
        MismatchError: ``old_key`` has no record holding ``old_value``; nothing
        changed. Interrupted: moved back (forever) if it had moved.
        """
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        command = _core.change_key(name, old_key, old_value, new_key, new_value, words)
        n, ok, ov = _core.namespace(name), _core.key(old_key), _core.value(old_value)
        nk, nv = _core.key(new_key), _core.value(new_value)
        return self._interruptible(command, lambda: self._move_back(n, ok, ov, nk, nv))

    def mprepare(
        self,
        entries: Iterable[Entry],
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> bool:
        """Reserve 1 to 64 ``(namespace, key, value)`` entries, all or none
        (PK.MPREPARE): True all reserved, False at least one key is held
        (nothing changed). The TTL applies to every entry, one expiry for all."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        checked = _core.entries(entries)

        def undo() -> None:
            for n, k, v in checked:
                self._release(n, k, v)

        return self._interruptible(_core.mprepare(checked, words), undo)

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

    def _acquire(self, n: bytes, k: bytes, v: bytes, words: _core.Words) -> bool:
        """using_prepare's prepare, resend-safe: after a ``0`` or an
        outcome-unknown error, a record holding exactly ``v`` is ours (a
        resent PREPARE answers 0 to its own first attempt)."""
        failure: Optional[BaseException] = None
        try:
            if self._interruptible(_core.prepare(n, k, v, words), lambda: self._release(n, k, v)):
                return True
        except Exception as err:
            if not outcome_unknown(err):
                raise
            failure = err
        try:
            record = self.get_value(n, k)
        except BaseException as read_error:
            try:
                self._release(n, k, v)
            except Exception:
                pass
            if failure is not None and isinstance(read_error, Exception):
                raise failure  # the prepare's error; an interrupt goes on as itself
            raise
        if record is not None and record.value == v:
            return True
        if failure is not None:
            raise failure
        return False

    def using_prepare(
        self,
        name: Data,
        key: Data,
        value: Data,
        ttl: Optional[TTL] = None,
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> ContextManager[bool]:
        """Prepare ``key``, run the with-block, roll back only if it fails::

            with pk.using_prepare("username", "alice", user_id) as prepared:
                if not prepared:
                    raise UsernameTaken("alice")
                emit_event(...)

        - The block runs with ``prepared`` True (reserved) or False (held by a
          live record); on False nothing is ever rolled back.
        - Resend-safe: after a ``0``, or after an error whose outcome is
          unknown (``outcome_unknown``), the record is read; if it holds
          exactly ``value``, the reservation is ours (a PREPARE resent by the
          client's retry answers 0 to its own first attempt) and the block
          runs with True. Values must identify the writer (a command id).
        - Prepared and the block raises: ``PK.ROLLBACK name key IFEQ value``
          (only this reservation; a rollback answering False is fine), then
          the block's exception propagates.
        - ... and the rollback itself raises: its exception propagates, raised
          ``from`` the block's (``__cause__``).
        - The prepare raises (UnavailableError, a transport error) and the
          record does not hold ``value``: the block does not run.
        """
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return self._using(name, key, value, words)

    @contextlib.contextmanager
    def _using(self, name: Data, key: Data, value: Data, words: _core.Words) -> Iterator[bool]:
        n, k, v = _core.namespace(name), _core.key(key), _core.value(value)
        if not self._acquire(n, k, v, words):
            yield False
            return
        try:
            yield True
        except BaseException as body_error:
            # BaseException: a KeyboardInterrupt or a cancellation in the
            # block leaves it undone too, so its reservation goes.
            try:
                self.rollback_if_eq(n, k, v)
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
        *,
        ttl_ms: Optional[int] = None,
        ttl_s: Optional[int] = None,
    ) -> T:
        """``using_prepare`` as a call: ``body(prepared)``'s result, with the
        same rollback on its exception."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        with self._using(name, key, value, words) as prepared:
            return body(prepared)
