"""RFC 8785, the JSON Canonicalization Scheme, over plain JSON values.

Written here rather than taken from the rfc8785 package because dogana_core uses the standard
library only; the tests compare this output with that package on generated values.

JCS sorts object keys by UTF-16 code units, prints numbers as ECMAScript's Number.toString does
(shortest round trip, -0 as 0) and emits UTF-8. An integer that binary64 cannot hold exactly is
refused rather than rounded: an identity must never depend on a rounding.
"""

from __future__ import annotations

import math
from typing import Any

from dogana_core.errors import SerializationError

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 bytes of a JSON value made of dict, list, str, int, float, bool and None."""
    return "".join(_emit(value, "$")).encode("utf-8")


def _emit(value: Any, path: str) -> list[str]:
    if value is None:
        return ["null"]
    if value is True:
        return ["true"]
    if value is False:
        return ["false"]
    if isinstance(value, int):
        return [_integer(value, path)]
    if isinstance(value, float):
        return [_number(value, path)]
    if isinstance(value, str):
        return [_string(value, path)]
    if isinstance(value, list | tuple):
        parts = ["["]
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            parts.extend(_emit(item, f"{path}[{index}]"))
        parts.append("]")
        return parts
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise SerializationError(path, f"object key {key!r} is not a string")
        parts = ["{"]
        for index, key in enumerate(sorted(value, key=_utf16_units)):
            if index:
                parts.append(",")
            parts.append(_string(key, path))
            parts.append(":")
            parts.extend(_emit(value[key], f"{path}.{key}"))
        parts.append("}")
        return parts
    raise SerializationError(path, f"{type(value).__name__} is not a JSON value")


def _utf16_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _string(text: str, path: str) -> str:
    out = ['"']
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            raise SerializationError(path, "string holds a lone surrogate")
        escaped = _SHORT_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _integer(value: int, path: str) -> str:
    if abs(value) <= 2**53:
        return str(value)
    try:
        as_float = float(value)
    except OverflowError:
        raise SerializationError(path, f"integer {value} overflows binary64") from None
    if int(as_float) != value:
        raise SerializationError(
            path, f"integer {value} is not exact in binary64; send it as a string"
        )
    return _number(as_float, path)


def _number(value: float, path: str) -> str:
    """ECMAScript Number::toString for a finite binary64, from Python's shortest repr."""
    if not math.isfinite(value):
        raise SerializationError(path, f"{value} is not a JSON number")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{head}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text
