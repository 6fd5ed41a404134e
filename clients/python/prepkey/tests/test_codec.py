"""JacksonJson against the bytes Jackson writes (clients/testdata/jackson.json,
shared with the Go and Node helpers), without a sidecar."""

from __future__ import annotations

import json
import os
import unittest
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from prepkey import JacksonJson, Raw, java_double


@dataclass
class User:
    userId: str
    name: str


@dataclass
class Price:
    sku: str
    amount: float


@dataclass
class D:
    x: float


@dataclass
class N:
    i: int
    l: int  # noqa: E741 (the Kotlin property's name)


@dataclass
class B:
    ok: bool
    note: Optional[str]


@dataclass
class S:
    s: str


@dataclass
class Line:
    sku: str
    qty: int


@dataclass
class Order:
    id: str
    lines: List[Line]
    total: float


@dataclass
class E:
    tags: List[str]
    attrs: Dict[str, str]


#: The Python value for each case of jackson.json, by name.
VALUES: Dict[str, Any] = {
    "strings": User("42", "Zoë"),
    "top-level string": "abc",
    "double fraction": Price("A-1", 9.99),
    "double whole": D(100.0),
    "double 1e7": D(1.0e7),
    "double below 1e7": D(1234567.0),
    "double above 1e7": D(12345678.9),
    "double 1e-3": D(0.001),
    "double below 1e-3": D(1.0e-4),
    "double negative zero": D(-0.0),
    "double shortest": D(0.1 + 0.2),
    "double large": D(1.0e21),
    "double negative": D(-2.5e-8),
    "int and long": N(-5, 9007199254740993),
    "boolean and null": B(True, None),
    "escapes": S("a\"b\\c\n\t\r\b\x0c\x01\x1f</script>&'\x7f\u2028\U0001F600"),
    "nested": Order("o1", [Line("a", 2), Line("b", 1)], 19.5),
    "empty collections": E([], {}),
}

#: clients/testdata/jackson.json, from clients/python/prepkey/tests
TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "jackson.json")


class JacksonTest(unittest.TestCase):
    def test_every_case_byte_exact(self) -> None:
        with open(TESTDATA, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertEqual(sorted(c["name"] for c in cases), sorted(VALUES))
        for case in cases:
            with self.subTest(case["name"]):
                value = VALUES[case["name"]]
                encoded = JacksonJson().encode(value)
                self.assertEqual(encoded, case["expected"].encode("utf-8"))
                self.assertEqual(JacksonJson(type(value)).decode(encoded), value)

    def test_int_meant_as_a_double(self) -> None:
        # A field annotated float is a Kotlin Double: an int there is 100.0.
        self.assertEqual(JacksonJson().encode(D(100)), b'{"x":100.0}')  # type: ignore[arg-type]
        self.assertEqual(JacksonJson().encode(Price("a", 3)), b'{"sku":"a","amount":3.0}')  # type: ignore[arg-type]
        # Outside a typed field, the Python type decides.
        self.assertEqual(JacksonJson().encode({"x": 100}), b'{"x":100}')
        self.assertEqual(JacksonJson().encode({"x": 100.0}), b'{"x":100.0}')
        self.assertEqual(JacksonJson().encode([1, 1.0, True]), b"[1,1.0,true]")

    def test_dict_keeps_insertion_order(self) -> None:
        self.assertEqual(JacksonJson().encode({"b": 1, "a": [None, "x"]}), b'{"b":1,"a":[null,"x"]}')

    def test_decode(self) -> None:
        order = JacksonJson(Order).decode(b'{"id":"o1","lines":[{"sku":"a","qty":2}],"total":19}')
        self.assertEqual(order, Order("o1", [Line("a", 2)], 19.0))
        self.assertIsInstance(order.total, float)
        self.assertEqual(JacksonJson().decode(b'{"a":[1,2.5]}'), {"a": [1, 2.5]})
        with self.assertRaises(TypeError):
            JacksonJson(User).decode(b'{"userId":"42","name":"x","extra":1}')

    def test_refused(self) -> None:
        for value in (float("nan"), float("inf"), {1: "x"}, object(), b"bytes"):
            with self.subTest(value=value):
                with self.assertRaises((ValueError, TypeError)):
                    JacksonJson().encode(value)

    def test_java_double(self) -> None:
        cases = {
            1.0: "1.0", 0.5: "0.5", 9999999.0: "9999999.0", 1e-5: "1.0E-5", 1.5e16: "1.5E16",
            123456789012.0: "1.23456789012E11", 0.000999: "9.99E-4",
            1.7976931348623157e308: "1.7976931348623157E308",
            5e-324: "4.9E-324",  # Double.MIN_VALUE: two digits, the nearer ones
            1e-323: "9.9E-324",
            1e23: "1.0E23",
        }
        for x, text in cases.items():
            with self.subTest(x=x):
                self.assertEqual(java_double(x), text)
                self.assertEqual(float(text), x)

    def test_raw(self) -> None:
        self.assertEqual(Raw().encode("é"), "é".encode())
        self.assertEqual(Raw().decode(b"\xff"), b"\xff")


if __name__ == "__main__":
    unittest.main()
