"""What the tests share: the sidecars of the environment, clients for RESP2
and RESP3, unique names, and client wrappers that record or redirect what the
helper sends (the helper only ever calls ``execute_command``)."""

from __future__ import annotations

import inspect
import math
import os
import secrets
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Tuple

import redis
import redis.asyncio

def speaks_resp3() -> bool:
    """Whether the installed redis-py takes ``protocol=3`` (it does from 5.0).
    Asked of the constructor rather than of ``__version__``, which redis-py
    5 reads from the installed package's metadata."""
    return "protocol" in inspect.signature(redis.Redis.__init__).parameters


def resp3_skip_reason() -> Optional[str]:
    """Why RESP3 cannot be tested with the installed redis-py, or None."""
    if speaks_resp3():
        return None
    return (
        f"redis-py {redis.__version__} speaks only RESP2: "
        "RESP3 (protocol=3) needs redis-py >= 5.0"
    )


def async_hiredis_decodes() -> bool:
    """Whether redis.asyncio decodes replies despite NEVER_DECODE: its hiredis
    parser ignored the option before redis-py 5.0.2, so a client made with
    ``decode_responses=True`` hands values back as str (the helper re-encodes
    UTF-8 ones; others fail in redis-py with UnicodeDecodeError)."""
    from redis.utils import HIREDIS_AVAILABLE

    version = tuple(int(part) for part in redis.__version__.split(".")[:3] if part.isdigit())
    return bool(HIREDIS_AVAILABLE) and version < (5, 0, 2)


@dataclass(frozen=True)
class Sidecars:
    host: str
    port: int
    password: Optional[str]
    unavailable_port: int
    backend: str


_announced: List[bool] = []


def announce(env: Sidecars) -> None:
    """Say once per run what the suite runs against."""
    if not _announced:
        _announced.append(True)
        print(
            f"\nprepkey tests: redis-py {redis.__version__}, sidecar {env.host}:{env.port} "
            f"(backend {env.backend}), unavailable sidecar :{env.unavailable_port}",
            file=sys.stderr,
        )


def sidecars() -> Sidecars:
    """The sidecars named by the environment. A missing variable is an error,
    not a skip: a suite that ran against nothing must not pass."""
    missing = [v for v in ("PREPKEY_PORT", "PREPKEY_UNAVAILABLE_PORT") if not os.environ.get(v)]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} not set: the tests need a sidecar (PREPKEY_HOST, "
            "PREPKEY_PORT, PREPKEY_PASSWORD) and one whose backend is down "
            "(PREPKEY_UNAVAILABLE_PORT); clients/run.sh starts them"
        )
    env = Sidecars(
        host=os.environ.get("PREPKEY_HOST", "127.0.0.1"),
        port=int(os.environ["PREPKEY_PORT"]),
        password=os.environ.get("PREPKEY_PASSWORD") or None,
        unavailable_port=int(os.environ["PREPKEY_UNAVAILABLE_PORT"]),
        backend=os.environ.get("PREPKEY_BACKEND", "not named"),
    )
    announce(env)
    return env


def client_kwargs(protocol: int, port: Optional[int] = None, **extra: Any) -> Dict[str, Any]:
    """redis-py arguments for the working sidecar (or ``port``) speaking
    ``protocol``. redis-py 8 opens with RESP3 by default, so RESP2 is asked
    for explicitly wherever redis-py knows the option."""
    env = sidecars()
    kwargs: Dict[str, Any] = dict(host=env.host, port=port or env.port, password=env.password)
    if speaks_resp3():
        kwargs["protocol"] = protocol
    elif protocol != 2:
        raise AssertionError(resp3_skip_reason())
    kwargs.update(extra)
    return kwargs


def unique(prefix: str) -> str:
    """A namespace or key no other run uses (namespaces: at most 64 bytes)."""
    return f"{prefix}-{secrets.token_hex(6)}"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def now_ms_floor() -> int:
    return time.time_ns() // 1_000_000


def now_ms_ceil() -> int:
    return math.ceil(time.time_ns() / 1_000_000)


def ms_datetime(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)


def whole_ms(at: datetime) -> datetime:
    """``at`` truncated to the millisecond, as the sidecar keeps it."""
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


def resp_of(info: Any) -> str:
    """The ``resp=`` field of CLIENT INFO (a dict from redis-py's parser, or
    the raw line)."""
    if isinstance(info, dict):
        return str(info["resp"])
    text = info.decode() if isinstance(info, bytes) else str(info)
    fields = dict(f.split("=", 1) for f in text.split() if "=" in f)
    return fields["resp"]


#: How long a test waits for an event (an expiry) before failing.
DEADLINE_SECONDS = 10.0


# --- sync wrappers ---------------------------------------------------------


class Recording:
    """A client that forwards every command to ``inner`` and records it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: List[Tuple[Any, ...]] = []
        self.replies: List[Any] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(args)
        reply = self.inner.execute_command(*args, **options)
        self.replies.append(reply)
        return reply

    def names(self) -> List[bytes]:
        return [args[0] for args in self.sent]

    def close(self) -> None:
        self.inner.close()


class RollbackFails(Recording):
    """Forwards to ``inner``, except PK.ROLLBACK: sent to ``rollback_client``
    (the sidecar whose backend is down, so a real -UNAVAILABLE), or, when
    ``error`` is given, raising it as a transport failure would."""

    def __init__(self, inner: Any, rollback_client: Any = None, error: Optional[BaseException] = None) -> None:
        super().__init__(inner)
        self.rollback_client = rollback_client
        self.error = error

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if args[0] != b"PK.ROLLBACK":
            return super().execute_command(*args, **options)
        self.sent.append(args)
        if self.error is not None:
            raise self.error
        return self.rollback_client.execute_command(*args, **options)


# --- async wrappers --------------------------------------------------------


async def aclose(client: Any) -> None:
    """Close a redis.asyncio client (aclose from redis-py 5.0.1, close before)."""
    close = getattr(client, "aclose", None) or client.close
    await close()


class AsyncRecording:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: List[Tuple[Any, ...]] = []
        self.replies: List[Any] = []

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(args)
        reply = await self.inner.execute_command(*args, **options)
        self.replies.append(reply)
        return reply

    def names(self) -> List[bytes]:
        return [args[0] for args in self.sent]

    async def aclose(self) -> None:
        await aclose(self.inner)


class AsyncRollbackFails(AsyncRecording):
    def __init__(self, inner: Any, rollback_client: Any = None, error: Optional[BaseException] = None) -> None:
        super().__init__(inner)
        self.rollback_client = rollback_client
        self.error = error

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if args[0] != b"PK.ROLLBACK":
            return await super().execute_command(*args, **options)
        self.sent.append(args)
        if self.error is not None:
            raise self.error
        return await self.rollback_client.execute_command(*args, **options)
