"""The typed handle: one namespace, typed values (``pk.key(name, codec=...)``),
the counterpart of Wow's ``PrepareKey<V>``.

    users = pk.key("username", codec=JacksonJson(User))
    with users.using_prepare("alice", User("42")) as prepared:
        ...
    users.get("alice")  # User(user_id='42')

Every operation is the ``Prepkey`` one with the namespace bound and the value
encoded by the codec (default ``JacksonJson()``: Jackson's bytes, so that
IFEQ matches what Wow wrote); what comes back is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, AsyncContextManager, ContextManager, Generic, Optional, TypeVar

from . import _core
from ._core import Data, TTL
from .codec import Codec, JacksonJson

if TYPE_CHECKING:
    from .async_client import AsyncPrepkey
    from .client import Prepkey

__all__ = ["Key", "AsyncKey", "TypedRecord"]

V = TypeVar("V")


@dataclass(frozen=True)
class TypedRecord(Generic[V]):
    """``Record`` with its value decoded."""

    value: V
    expires_at: Optional[datetime]


class _Bound(Generic[V]):
    def __init__(self, name: Data, codec: Optional[Codec[V]]) -> None:
        self.name = _core.namespace(name)
        self.codec: Codec[V] = codec if codec is not None else JacksonJson()

    def _decode(self, data: Optional[bytes]) -> Optional[V]:
        return None if data is None else self.codec.decode(data)

    def _record(self, record: Any) -> Optional[TypedRecord[V]]:
        return None if record is None else TypedRecord(self.codec.decode(record.value), record.expires_at)

    def _opt(self, value: Optional[V]) -> Optional[bytes]:
        return None if value is None else self.codec.encode(value)


class Key(_Bound[V]):
    """Namespace ``name`` of a ``Prepkey`` with values of type V (sync)."""

    def __init__(self, pk: "Prepkey", name: Data, codec: Optional[Codec[V]] = None) -> None:
        super().__init__(name, codec)
        self.pk = pk

    def prepare(self, key: Data, value: V, ttl: Optional[TTL] = None, *,
                ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> bool:
        """``Prepkey.prepare`` with ``value`` encoded."""
        return self.pk.prepare(self.name, key, self.codec.encode(value), ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    def get(self, key: Data) -> Optional[V]:
        """The live record's value, decoded, or None."""
        return self._decode(self.pk.get(self.name, key))

    def get_value(self, key: Data) -> Optional[TypedRecord[V]]:
        """The record (live or expired but retained), decoded, or None."""
        return self._record(self.pk.get_value(self.name, key))

    def rollback(self, key: Data, if_eq: Optional[V] = None) -> bool:
        """Delete the record; with ``if_eq``, only if it holds that value."""
        if if_eq is None:
            return self.pk.rollback(self.name, key)
        return self.pk.rollback_if_eq(self.name, key, self.codec.encode(if_eq))

    def reprepare(self, key: Data, value: V, *, if_eq: Optional[V] = None, keep_ttl: bool = False,
                  ttl: Optional[TTL] = None, ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> bool:
        """``Prepkey.reprepare`` with the values encoded."""
        return self.pk.reprepare(self.name, key, self.codec.encode(value), if_eq=self._opt(if_eq),
                                 keep_ttl=keep_ttl, ttl=ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    def change_key(self, old_key: Data, old_value: V, new_key: Data, new_value: V, ttl: Optional[TTL] = None,
                   *, ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> bool:
        """``Prepkey.change_key`` with the values encoded."""
        return self.pk.change_key(self.name, old_key, self.codec.encode(old_value), new_key,
                                  self.codec.encode(new_value), ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    def using_prepare(self, key: Data, value: V, ttl: Optional[TTL] = None, *,
                      ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> ContextManager[bool]:
        """``Prepkey.using_prepare`` (resend rule included) with ``value`` encoded."""
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return self.pk._using(self.name, key, self.codec.encode(value), words)


class AsyncKey(_Bound[V]):
    """Namespace ``name`` of an ``AsyncPrepkey`` with values of type V."""

    def __init__(self, pk: "AsyncPrepkey", name: Data, codec: Optional[Codec[V]] = None) -> None:
        super().__init__(name, codec)
        self.pk = pk

    async def prepare(self, key: Data, value: V, ttl: Optional[TTL] = None, *,
                      ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> bool:
        return await self.pk.prepare(self.name, key, self.codec.encode(value), ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    async def get(self, key: Data) -> Optional[V]:
        return self._decode(await self.pk.get(self.name, key))

    async def get_value(self, key: Data) -> Optional[TypedRecord[V]]:
        return self._record(await self.pk.get_value(self.name, key))

    async def rollback(self, key: Data, if_eq: Optional[V] = None) -> bool:
        if if_eq is None:
            return await self.pk.rollback(self.name, key)
        return await self.pk.rollback_if_eq(self.name, key, self.codec.encode(if_eq))

    async def reprepare(self, key: Data, value: V, *, if_eq: Optional[V] = None, keep_ttl: bool = False,
                        ttl: Optional[TTL] = None, ttl_ms: Optional[int] = None,
                        ttl_s: Optional[int] = None) -> bool:
        return await self.pk.reprepare(self.name, key, self.codec.encode(value), if_eq=self._opt(if_eq),
                                       keep_ttl=keep_ttl, ttl=ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    async def change_key(self, old_key: Data, old_value: V, new_key: Data, new_value: V,
                         ttl: Optional[TTL] = None, *, ttl_ms: Optional[int] = None,
                         ttl_s: Optional[int] = None) -> bool:
        return await self.pk.change_key(self.name, old_key, self.codec.encode(old_value), new_key,
                                        self.codec.encode(new_value), ttl, ttl_ms=ttl_ms, ttl_s=ttl_s)

    def using_prepare(self, key: Data, value: V, ttl: Optional[TTL] = None, *,
                      ttl_ms: Optional[int] = None, ttl_s: Optional[int] = None) -> AsyncContextManager[bool]:
        words = _core.ttl_words(ttl, ttl_ms, ttl_s)
        return self.pk._using(self.name, key, self.codec.encode(value), words)
