"""Typed helpers for prepkey's PK commands over redis-py (sync and asyncio).

    import redis, prepkey
    pk = prepkey.Prepkey(redis.Redis(host="127.0.0.1", port=6380, password="pw"))
    with pk.using_prepare("username", "alice", b'{"userId":"42"}') as prepared:
        ...

See README.md beside this package for the whole API.
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
