"""Codecs for the typed handle (``pk.key(name, codec=...)``): how a value
becomes the record's bytes and back.

``JacksonJson`` writes JSON byte for byte as Jackson (Wow's JsonSerializer,
with jackson-module-kotlin and default features) writes a Kotlin data class,
so that ``ROLLBACK ... IFEQ`` and ``REPREPARE ... IFEQ`` match records Wow
wrote on Redis. The rules, and the bytes they give for a fixed set of values,
are in clients/testdata/jackson.json, which the Go, Python and Node helpers'
tests share.
"""

from __future__ import annotations

import dataclasses
import decimal
import json
import math
import typing
from typing import Any, Dict, Generic, List, Optional, Protocol, Type, TypeVar, Union

__all__ = ["Codec", "JacksonJson", "Raw", "java_double"]

V = TypeVar("V")


class Codec(Protocol[V]):
    """What a typed handle needs: ``encode(value) -> bytes`` and
    ``decode(bytes) -> value``, each the other's inverse."""

    def encode(self, value: V) -> bytes: ...

    def decode(self, data: bytes) -> V: ...


class Raw:
    """The identity codec: values are bytes (str is encoded as UTF-8)."""

    def encode(self, value: Union[bytes, str]) -> bytes:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise TypeError(f"Raw encodes bytes or str, not {type(value).__name__}")

    def decode(self, data: bytes) -> bytes:
        return data


def java_double(x: float) -> str:
    """``x`` as Java's ``Double.toString`` writes it (JDK 19 and later, which
    Jackson uses for a Double): the shortest digits that round-trip (Python's
    ``repr`` finds the same ones), plain with at least one fraction digit when
    1e-3 <= |x| < 1e7, else ``d.dddE<n>``.

    NaN and the infinities are refused (ValueError): JSON has no such numbers
    and Jackson's default writes them as strings a Kotlin Double field would
    not read back, so they are not values to reserve with.
    """
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{x!r} has no JSON form")
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    # repr: the shortest round-trip digits, as "123.45", "1e-05", "1.5e+16"
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # the decimal exponent of the first significant digit
    point = len(whole) + (int(exp_text) if exp_text else 0)  # digits before the point
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    exponent = point - leading_zeros - 1
    digits = digits.rstrip("0") or "0"
    if len(digits) == 1:
        # Java writes at least two digits, and picks the two-digit decimal
        # nearest to the double: d.0 for every normal double, but not for a
        # subnormal such as 4.9E-324 (Double.MIN_VALUE), whose shortest form
        # 5e-324 lies farther from it.
        exact = decimal.Decimal(abs(x))
        exponent = exact.adjusted()
        two = exact.scaleb(-exponent).quantize(decimal.Decimal("0.1"), rounding=decimal.ROUND_HALF_EVEN)
        if two >= 10:
            two, exponent = two / 10, exponent + 1
        digits = str(two).replace(".", "").rstrip("0") or "0"
    if 1e-3 <= abs(x) < 1e7:
        if exponent >= 0:
            int_part = digits[: exponent + 1].ljust(exponent + 1, "0")
            frac_part = digits[exponent + 1 :] or "0"
        else:
            int_part = "0"
            frac_part = "0" * (-exponent - 1) + digits
        return f"{sign}{int_part}.{frac_part}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(s: str) -> str:
    """A JSON string as Jackson writes it: only ``"``, ``\\`` and the
    controls below U+0020 escaped (``\\b \\t \\n \\f \\r`` short, the others
    ``\\u00XX`` with upper-case hex); everything else as is (no HTML escaping;
    non-ASCII, DEL and U+2028 raw)."""
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _is_float_type(hint: Any) -> bool:
    """``float`` or ``Optional[float]``: a field declared as a Double."""
    if hint is float:
        return True
    if typing.get_origin(hint) is Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args == [float]
    return False


class JacksonJson(Generic[V]):
    """JSON as Jackson writes it for Kotlin values.

    Encoding, by Python type:

    - a dataclass: an object with its fields in declaration order (Kotlin's
      constructor properties, in order); ``None`` fields written as ``null``;
    - ``dict``: an object in insertion order (keys must be str);
    - ``list`` / ``tuple``: an array;
    - ``str``, ``bool``, ``None`` as JSON; ``int`` as its digits;
    - ``float`` as Java's ``Double.toString`` (``100.0``, ``1.0E7``).

    A Kotlin ``Double`` holding a whole number is written ``100.0``, an
    ``Int`` ``100``: Python tells them apart by type. Pass a ``float`` for a
    Double (``100.0`` or ``float(n)``); a dataclass field annotated ``float``
    (or ``Optional[float]``) is written as a Double even when it holds an int.

    Decoding: ``json.loads``, then, when ``type`` is a dataclass, its fields
    built from the object recursively (dataclass fields, ``List[...]``,
    ``Optional[...]`` and ``Dict[str, ...]`` of them); without ``type``, the
    plain ``json.loads`` value. Unknown fields are an error (TypeError), as a
    field missing without a default.
    """

    def __init__(self, type: Optional[Type[V]] = None) -> None:
        self.type = type

    def encode(self, value: V) -> bytes:
        out: List[str] = []
        _write(value, out, None)
        return "".join(out).encode("utf-8")

    def decode(self, data: bytes) -> V:
        loaded = json.loads(data.decode("utf-8"))
        if self.type is None:
            return typing.cast(V, loaded)
        return typing.cast(V, _build(self.type, loaded))


def _write(value: Any, out: List[str], hint: Any) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(java_double(float(value)) if _is_float_type(hint) else str(int(value)))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        out.append("{")
        for i, f in enumerate(dataclasses.fields(value)):
            if i:
                out.append(",")
            out.append(_string(f.name))
            out.append(":")
            _write(getattr(value, f.name), out, hints.get(f.name))
        out.append("}")
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be str, not {type(k).__name__}")
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(v, out, None)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        item_hint = _item_hint(hint)
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, item_hint)
        out.append("]")
    else:
        raise TypeError(f"JacksonJson cannot write a {type(value).__name__}")


def _hints(cls: type) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: no hints
        return {}


def _item_hint(hint: Any) -> Any:
    if typing.get_origin(hint) in (list, tuple, List):
        args = typing.get_args(hint)
        return args[0] if args else None
    return None


def _build(hint: Any, data: Any) -> Any:
    """``data`` (from json.loads) as ``hint`` says."""
    origin = typing.get_origin(hint)
    if origin is Union:
        if data is None:
            return None
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _build(args[0], data) if len(args) == 1 else data
    if origin in (list, List):
        (item,) = typing.get_args(hint) or (Any,)
        return [_build(item, x) for x in data]
    if origin in (dict, Dict):
        args = typing.get_args(hint)
        return {k: _build(args[1], v) for k, v in data.items()} if args else data
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise TypeError(f"{hint.__name__} is read from a JSON object, not {type(data).__name__}")
        hints = _hints(hint)
        return hint(**{k: _build(hints.get(k, Any), v) for k, v in data.items()})
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data
