"""What the sync and async clients share: argument checks, the commands' words
and the parsing of their replies. Nothing here does I/O, so both clients send
exactly the same bytes and read replies the same way.

Argument checks are limited to what the protocol fixes for every sidecar
(types, the namespace charset, an empty key, option combinations, MPREPARE's
1 to 64 keys, SCAN's COUNT range); what depends on the sidecar's flags (the
key and value size limits) or its clock (an absolute expiry already past) is
left to the sidecar, which answers with a PrepkeyError.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Generic, Iterable, List, Optional, Tuple, TypeVar, Union

from .errors import PrepkeyError

__all__ = [
    "Data",
    "TTL",
    "Entry",
    "Record",
    "ScanRecord",
    "Command",
]

#: A key, a value or a namespace: ``str`` (sent as UTF-8) or bytes-like.
Data = Union[str, bytes, bytearray, memoryview]

#: An expiry: ``timedelta`` (PX, whole milliseconds) or an aware ``datetime``
#: (PXAT, whole milliseconds); ``None``: forever. A bare ``int`` is seconds
#: (EX), deprecated: write ``timedelta(seconds=n)`` or ``ttl_s=n``.
TTL = Union[timedelta, datetime, int]

#: One reservation of ``mprepare``: (namespace, key, value).
Entry = Tuple[Data, Data, Data]

T = TypeVar("T")

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MILLISECOND = timedelta(milliseconds=1)
_NAMESPACE = re.compile(rb"[A-Za-z0-9_.\-]{1,64}")
#: PK.MPREPARE takes 1 to 64 keys (the contract's fixed bounds).
MAX_MPREPARE_KEYS = 64
#: PK.SCAN's COUNT hint is 1 to 1000.
MAX_SCAN_COUNT = 1000


@dataclass(frozen=True)
class Record:
    """A reservation as ``PK.GETVALUE`` shows it, live or expired but retained.

    ``expires_at`` is an aware UTC datetime with millisecond precision, or
    ``None`` for a reservation that never expires.
    """

    value: bytes
    expires_at: Optional[datetime]

    def is_live(self, now: Optional[datetime] = None) -> bool:
        """Whether the record is live at ``now`` (default: this machine's clock).

        The sidecar's backend clock decides; this is for reading a record, not
        for deciding whether a prepare will succeed.
        """
        if self.expires_at is None:
            return True
        return (now or datetime.now(timezone.utc)) < self.expires_at


@dataclass(frozen=True)
class ScanRecord:
    """One record of ``PK.SCAN``: its key, value and expiry (as in Record)."""

    key: bytes
    value: bytes
    expires_at: Optional[datetime]

    def is_live(self, now: Optional[datetime] = None) -> bool:
        """As ``Record.is_live``."""
        return _live(self.expires_at, now)


def _live(expires_at: Optional[datetime], now: Optional[datetime]) -> bool:
    if expires_at is None:
        return True
    return (now or datetime.now(timezone.utc)) < expires_at


@dataclass(frozen=True)
class Command(Generic[T]):
    """The arguments of one command and how to read its reply."""

    args: Tuple[bytes, ...]
    parse: Callable[[Any], T]


# --- arguments -------------------------------------------------------------


def _bytes(data: object, what: str) -> bytes:
    """``data`` as bytes; str is UTF-8. Other types are a TypeError: redis-py
    would send an int as its digits and refuse None, and neither is a value the
    caller meant."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be str or bytes, not {type(data).__name__}")


def namespace(name: object) -> bytes:
    """A namespace: 1 to 64 bytes of ``A-Z a-z 0-9 _ . -``."""
    raw = _bytes(name, "namespace")
    if not _NAMESPACE.fullmatch(raw):
        raise ValueError(f"invalid namespace name {raw!r}: 1 to 64 bytes of A-Z a-z 0-9 _ . -")
    return raw


def key(data: object, what: str = "key") -> bytes:
    """A key: at least one byte (the upper limit is the sidecar's flag)."""
    raw = _bytes(data, what)
    if not raw:
        raise ValueError(f"{what} is empty: keys are at least 1 byte")
    return raw


def value(data: object, what: str = "value") -> bytes:
    """A value: any bytes, empty included."""
    return _bytes(data, what)


def ttl_args(ttl: Optional[TTL]) -> Tuple[bytes, ...]:
    """The TTL option for ``ttl``: PX for a timedelta, PXAT for an aware
    datetime, EX for int seconds, nothing (forever) for None."""
    if ttl is None:
        return ()
    if isinstance(ttl, timedelta):
        return (b"PX", _positive_ms(ttl // _MILLISECOND, "ttl"))
    if isinstance(ttl, datetime):
        if ttl.tzinfo is None or ttl.utcoffset() is None:
            raise ValueError("ttl datetime must be aware (give it a tzinfo, e.g. timezone.utc)")
        return (b"PXAT", _positive_ms((ttl - EPOCH) // _MILLISECOND, "ttl datetime"))
    if isinstance(ttl, int) and not isinstance(ttl, bool):
        if ttl < 1:
            raise ValueError(f"ttl must be at least 1 second, got {ttl}")
        return (b"EX", str(ttl).encode())
    raise TypeError(
        "ttl must be a timedelta, an aware datetime or int seconds, "
        f"not {type(ttl).__name__}"
    )


def ttl_words(
    ttl: Optional[TTL] = None,
    ttl_ms: Optional[int] = None,
    ttl_s: Optional[int] = None,
    stacklevel: int = 3,
) -> Tuple[bytes, ...]:
    """The TTL option of a call that takes ``ttl``, ``ttl_ms`` and ``ttl_s``
    (at most one): ``ttl_ms`` is PX, ``ttl_s`` EX, ``ttl`` as ``ttl_args``.

    A bare number for ``ttl`` is seconds, as before, with a DeprecationWarning:
    the Node helper's bare number is milliseconds, so a bare number says
    nothing a reader can trust; a ``timedelta`` or the unit in the name does.
    """
    given = [n for n, v in (("ttl", ttl), ("ttl_ms", ttl_ms), ("ttl_s", ttl_s)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give at most one of ttl, ttl_ms and ttl_s, not {' and '.join(given)}")
    if ttl_ms is not None:
        return (b"PX", _positive_int(ttl_ms, "ttl_ms"))
    if ttl_s is not None:
        return (b"EX", _positive_int(ttl_s, "ttl_s"))
    if isinstance(ttl, int) and not isinstance(ttl, bool):
        warnings.warn(
            f"ttl={ttl} as a bare number of seconds is deprecated: "
            f"write ttl=timedelta(seconds={ttl}) or ttl_s={ttl}",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
    return ttl_args(ttl)


def _positive_int(n: object, what: str) -> bytes:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{what} must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{what} must be at least 1, got {n}")
    return str(n).encode()


def _positive_ms(ms: int, what: str) -> bytes:
    if ms < 1:
        raise ValueError(f"{what} must be at least 1 millisecond (after the epoch), got {ms} ms")
    return str(ms).encode()


# --- replies ---------------------------------------------------------------


def _unexpected(reply: object) -> PrepkeyError:
    return PrepkeyError(f"unexpected reply from the sidecar: {reply!r}")


def parse_bool(reply: object) -> bool:
    """``:1`` / ``:0``. Anything else is not a sidecar's answer to a PK command."""
    if isinstance(reply, int) and not isinstance(reply, bool) and reply in (0, 1):
        return reply == 1
    raise _unexpected(reply)


def _reply_bytes(reply: object) -> bytes:
    # The clients ask redis-py not to decode (NEVER_DECODE); a str still
    # arrives from a client object that ignores that option, so take it back
    # to the bytes it came from.
    if isinstance(reply, bytes):
        return reply
    if isinstance(reply, str):
        return reply.encode("utf-8")
    raise _unexpected(reply)


def parse_optional_bytes(reply: object) -> Optional[bytes]:
    """A bulk string, or nil (RESP2 ``$-1``, RESP3 ``_``) as None."""
    if reply is None:
        return None
    return _reply_bytes(reply)


def expires_at(ttl_at: object) -> Optional[datetime]:
    """``ttlAt`` (Unix milliseconds, -1 for forever) as an aware datetime."""
    if isinstance(ttl_at, (bytes, str)):
        # RESP2 and RESP3 both carry it as an integer; a string form is
        # accepted for clients that hand integers back as text.
        try:
            ttl_at = int(ttl_at)
        except ValueError:
            raise _unexpected(ttl_at) from None
    if not isinstance(ttl_at, int) or isinstance(ttl_at, bool):
        raise _unexpected(ttl_at)
    if ttl_at == -1:
        return None
    return EPOCH + timedelta(milliseconds=ttl_at)


def parse_record(reply: object) -> Optional[Record]:
    """``[value, ttlAt]`` or nil."""
    if reply is None:
        return None
    if not isinstance(reply, (list, tuple)) or len(reply) != 2:
        raise _unexpected(reply)
    return Record(_reply_bytes(reply[0]), expires_at(reply[1]))


def parse_scan_page(reply: object) -> Tuple[bytes, List[ScanRecord]]:
    """``[next-cursor, [[key, value, ttlAt], ...]]``."""
    if not isinstance(reply, (list, tuple)) or len(reply) != 2:
        raise _unexpected(reply)
    cursor, rows = reply
    if not isinstance(rows, (list, tuple)):
        raise _unexpected(reply)
    records = []
    for row in rows:
        if not isinstance(row, (list, tuple)) or len(row) != 3:
            raise _unexpected(row)
        records.append(ScanRecord(_reply_bytes(row[0]), _reply_bytes(row[1]), expires_at(row[2])))
    return _reply_bytes(cursor), records


# --- commands --------------------------------------------------------------


#: The TTL option as ttl_words made it (b"PX", b"1500"), or () for forever.
Words = Tuple[bytes, ...]


def prepare(name: Data, k: Data, v: Data, ttl: Words) -> Command[bool]:
    args = (b"PK.PREPARE", namespace(name), key(k), value(v)) + ttl
    return Command(args, parse_bool)


def get(name: Data, k: Data) -> Command[Optional[bytes]]:
    return Command((b"PK.GET", namespace(name), key(k)), parse_optional_bytes)


def get_value(name: Data, k: Data) -> Command[Optional[Record]]:
    return Command((b"PK.GETVALUE", namespace(name), key(k)), parse_record)


def rollback(name: Data, k: Data) -> Command[bool]:
    return Command((b"PK.ROLLBACK", namespace(name), key(k)), parse_bool)


def rollback_if_eq(name: Data, k: Data, v: Data) -> Command[bool]:
    args = (b"PK.ROLLBACK", namespace(name), key(k), b"IFEQ", value(v, "if_eq value"))
    return Command(args, parse_bool)


def reprepare(
    name: Data,
    k: Data,
    v: Data,
    if_eq: Optional[Data],
    keep_ttl: bool,
    ttl: Words,
) -> Command[bool]:
    args: Tuple[bytes, ...] = (b"PK.REPREPARE", namespace(name), key(k), value(v))
    if if_eq is not None:
        args += (b"IFEQ", value(if_eq, "if_eq"))
    if not isinstance(keep_ttl, bool):
        raise TypeError(f"keep_ttl must be a bool, not {type(keep_ttl).__name__}")
    if keep_ttl:
        if ttl:
            raise ValueError("keep_ttl and ttl exclude each other")
        args += (b"KEEPTTL",)
    return Command(args + ttl, parse_bool)


def change_key(
    name: Data,
    old_key: Data,
    old_value: Data,
    new_key: Data,
    new_value: Data,
    ttl: Words,
) -> Command[bool]:
    old = key(old_key, "old_key")
    new = key(new_key, "new_key")
    if old == new:
        raise ValueError("old_key and new_key must differ")
    args = (
        b"PK.REPREPARE", namespace(name), new, value(new_value, "new_value"),
        b"FROM", old, b"IFEQ", value(old_value, "old_value"),
    ) + ttl
    return Command(args, parse_bool)


def entries(items: Iterable[Entry]) -> List[Tuple[bytes, bytes, bytes]]:
    """``mprepare``'s entries, checked, as bytes."""
    if isinstance(items, (str, bytes, bytearray, memoryview)):
        raise TypeError("entries must be an iterable of (namespace, key, value) tuples")
    out: List[Tuple[bytes, bytes, bytes]] = []
    for entry in items:
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise TypeError(f"each entry must be a (namespace, key, value) tuple, not {entry!r}")
        out.append((namespace(entry[0]), key(entry[1]), value(entry[2])))
    if not 1 <= len(out) <= MAX_MPREPARE_KEYS:
        raise ValueError(f"mprepare takes 1 to {MAX_MPREPARE_KEYS} entries, got {len(out)}")
    return out


def mprepare(checked: List[Tuple[bytes, bytes, bytes]], ttl: Words) -> Command[bool]:
    """PK.MPREPARE over entries already checked by ``entries``."""
    args: Tuple[bytes, ...] = (b"PK.MPREPARE", str(len(checked)).encode())
    for triple in checked:
        args += triple
    return Command(args + ttl, parse_bool)


@dataclass(frozen=True)
class ScanOptions:
    """PK.SCAN's options after one call, without the cursor."""

    name: bytes
    options: Tuple[bytes, ...]

    def page(self, cursor: bytes) -> Command[Tuple[bytes, List[ScanRecord]]]:
        return Command((b"PK.SCAN", self.name, cursor) + self.options, parse_scan_page)


def scan_options(
    name: Data,
    match: Optional[Data],
    count: Optional[int],
    live: bool,
    expired: bool,
) -> ScanOptions:
    options: Tuple[bytes, ...] = ()
    if match is not None:
        options += (b"MATCH", _bytes(match, "match"))
    if count is not None:
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        if not 1 <= count <= MAX_SCAN_COUNT:
            raise ValueError(f"count must be 1 to {MAX_SCAN_COUNT}, got {count}")
        options += (b"COUNT", str(count).encode())
    if live and expired:
        raise ValueError("live and expired exclude each other (neither: both kinds)")
    if live:
        options += (b"LIVE",)
    if expired:
        options += (b"EXPIRED",)
    return ScanOptions(namespace(name), options)


#: The first cursor of a scan, and the one that ends it.
SCAN_START = b"0"
