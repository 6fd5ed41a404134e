"""The typed handle (pk.key) against a real sidecar, sync and asyncio."""

from __future__ import annotations

import unittest
import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, List

import redis
import redis.asyncio

from prepkey import AsyncPrepkey, JacksonJson, Prepkey, Raw, TypedRecord

from .support import aclose, client_kwargs, sidecars, unique


@dataclass
class User:
    userId: str
    score: float


#: What Wow (Jackson) writes for User("42", 100.0): IFEQ must match it.
WOW_BYTES = b'{"userId":"42","score":100.0}'


class SyncKeyTest(unittest.TestCase):
    def setUp(self) -> None:
        sidecars()
        self.redis = redis.Redis(**client_kwargs(2))
        self.addCleanup(self.redis.close)
        self.pk = Prepkey(self.redis)
        self.ns = unique("pyk")
        self.users = self.pk.key(self.ns, codec=JacksonJson(User))

    def test_operations(self) -> None:
        users, alice = self.users, User("42", 100)  # an int in a float field: a Double
        self.assertIs(users.prepare("alice", alice, ttl=timedelta(hours=1)), True)
        self.assertEqual(self.pk.get(self.ns, "alice"), WOW_BYTES)
        self.assertEqual(users.get("alice"), User("42", 100.0))
        record = users.get_value("alice")
        assert record is not None and record.expires_at is not None
        self.assertEqual(record.value, User("42", 100.0))
        self.assertIsNone(users.get("bob"))
        self.assertIsNone(users.get_value("bob"))
        self.assertIs(users.reprepare("alice", User("42", 1.5), if_eq=User("7", 0.0)), False)
        self.assertIs(users.reprepare("alice", User("42", 1.5), if_eq=alice, keep_ttl=True), True)
        self.assertEqual(users.get_value("alice"), TypedRecord(User("42", 1.5), record.expires_at))
        self.assertIs(users.change_key("alice", User("42", 1.5), "alice2", alice, ttl_s=60), True)
        self.assertIsNone(users.get("alice"))
        self.assertIs(users.rollback("alice2", if_eq=User("42", 2.0)), False)
        self.assertIs(users.rollback("alice2", if_eq=alice), True)
        self.assertIs(users.prepare("carol", alice), True)
        self.assertIs(users.rollback("carol"), True)
        self.assertIs(users.rollback("carol"), False)

    def test_ifeq_matches_a_record_wow_wrote(self) -> None:
        self.assertIs(self.pk.prepare(self.ns, "alice", WOW_BYTES), True)
        self.assertIs(self.users.rollback("alice", if_eq=User("42", 100.0)), True)

    def test_using_prepare(self) -> None:
        with self.users.using_prepare("alice", User("42", 1.0), ttl_ms=60000) as prepared:
            self.assertIs(prepared, True)
        with self.assertRaises(LookupError):
            with self.users.using_prepare("bob", User("7", 1.0)) as prepared:
                self.assertIs(prepared, True)
                raise LookupError("not emitted")
        self.assertEqual(self.users.get("alice"), User("42", 1.0))
        self.assertIsNone(self.users.get_value("bob"))
        raw = self.pk.key(self.ns, codec=Raw())
        self.assertEqual(raw.get("alice"), b'{"userId":"42","score":1.0}')
        default = self.pk.key(self.ns)
        self.assertEqual(default.get("alice"), {"userId": "42", "score": 1.0})

    def test_bare_number_ttl_is_deprecated(self) -> None:
        with self.assertWarns(DeprecationWarning) as caught:
            self.assertIs(self.pk.prepare(self.ns, "k", "v", ttl=5), True)
        self.assertIn("ttl=timedelta(seconds=5) or ttl_s=5", str(caught.warning))
        self.assertEqual(caught.filename, __file__)
        record = self.pk.get_value(self.ns, "k")
        assert record is not None and record.expires_at is not None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertIs(self.pk.prepare(self.ns, "k2", "v", ttl_s=5), True)
            self.assertIs(self.pk.prepare(self.ns, "k3", "v", ttl=timedelta(seconds=5)), True)
        with self.assertRaises(ValueError):
            self.pk.prepare(self.ns, "k4", "v", ttl=timedelta(seconds=5), ttl_ms=5000)
        with self.assertRaises(TypeError):
            self.pk.prepare(self.ns, "k4", "v", ttl_ms=1.5)  # type: ignore[arg-type]


class AsyncKeyTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        sidecars()
        self.redis: Any = redis.asyncio.Redis(**client_kwargs(2))
        self.addAsyncCleanup(aclose, self.redis)
        self.pk = AsyncPrepkey(self.redis)
        self.ns = unique("pyk")
        self.users = self.pk.key(self.ns, codec=JacksonJson(User))

    async def test_operations(self) -> None:
        users, alice = self.users, User("42", 100.0)
        self.assertIs(await users.prepare("alice", alice), True)
        self.assertEqual(await self.pk.get(self.ns, "alice"), WOW_BYTES)
        self.assertEqual(await users.get("alice"), alice)
        self.assertEqual(await users.get_value("alice"), TypedRecord(alice, None))
        self.assertIs(await users.reprepare("alice", User("42", 1.5), if_eq=alice), True)
        self.assertIs(await users.change_key("alice", User("42", 1.5), "alice2", alice), True)
        self.assertIs(await users.rollback("alice2", if_eq=alice), True)
        ran: List[bool] = []
        with self.assertRaises(LookupError):
            async with users.using_prepare("bob", alice, ttl=timedelta(minutes=1)) as prepared:
                ran.append(prepared)
                raise LookupError("not emitted")
        self.assertEqual(ran, [True])
        self.assertIsNone(await users.get_value("bob"))
        self.assertIs(await self.pk.prepare(self.ns, "wow", WOW_BYTES), True)
        self.assertIs(await users.rollback("wow", if_eq=User("42", 100)), True)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
