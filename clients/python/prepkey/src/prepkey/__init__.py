"""Typed helpers for prepkey's PK commands over redis-py (sync and asyncio).

    import redis, prepkey
    pk = prepkey.Prepkey(redis.Redis(host="127.0.0.1", port=6380, password="pw"))
    users = pk.key("username", codec=prepkey.JacksonJson(User))  # Wow's JSON bytes
    with users.using_prepare("alice", User(userId="42")) as prepared:
        ...

``using_prepare`` is resend-safe (a record holding exactly your value is
yours), cancellations and interrupts leave no reservation of theirs behind,
``outcome_unknown(err)`` says whether a failed command may have taken effect.
See README.md beside this package for the whole API and the redis-py settings.
"""

from ._core import Data, Entry, Record, ScanRecord, TTL
from .async_client import AsyncClient, AsyncPrepkey
from .client import Prepkey, SyncClient
from .codec import Codec, JacksonJson, Raw, java_double
from .key import AsyncKey, Key, TypedRecord
from .errors import MismatchError, PrepkeyError, UnavailableError, outcome_unknown

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "AsyncKey",
    "AsyncPrepkey",
    "Codec",
    "Data",
    "Entry",
    "JacksonJson",
    "Key",
    "Raw",
    "TypedRecord",
    "java_double",
    "MismatchError",
    "Prepkey",
    "PrepkeyError",
    "Record",
    "ScanRecord",
    "SyncClient",
    "TTL",
    "UnavailableError",
    "outcome_unknown",
]
