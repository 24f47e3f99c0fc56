"""A duration as a person writes and reads it: 36h, 7d, 90m, 1d12h, PT36H, seconds, or none.

The command line's options and ActivateSourceOperator's ``expires`` read the same spellings, and
a limit is printed back in the shortest of them.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from dogana_core.claims import NO_LIMIT

_COMPACT = re.compile(
    r"(?:(?P<w>\d+)w)?(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d{1,6})?)s)?"
)
_ISO = re.compile(
    r"P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d{1,6})?)S)?)?"
)
_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]{1,6})?")
_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}

SPELLINGS = "36h, 7d, 90m, 1d12h, PT36H, seconds such as 129600 with at most six decimals, or none"


def parse_duration(text: str) -> timedelta:
    """36h, 7d, 90m, 1d12h, 45s; ISO 8601 (PT36H, P7D); plain seconds (129600, 0.5); or none.

    none (or max) is no limit: nothing expires. Exact to the microsecond, never rounded; years
    and months are refused, since their length varies. Anything else is a ValueError.
    """
    spelled = text.strip()
    if spelled in ("none", "max"):
        return NO_LIMIT
    match = _COMPACT.fullmatch(spelled) or _ISO.fullmatch(spelled.upper())
    units = {unit: value for unit, value in match.groupdict().items() if value} if match else {}
    try:
        if _PLAIN.fullmatch(spelled):
            seconds = Decimal(spelled)
        elif units:
            seconds = sum(
                (Decimal(value) * _SECONDS[unit] for unit, value in units.items()), Decimal(0)
            )
        else:
            raise ValueError(spelled)
        return timedelta(microseconds=int(seconds * 1_000_000))
    except (ValueError, OverflowError):
        raise ValueError(f"{text!r} is not a duration (write {SPELLINGS})") from None


def spell_duration(value: timedelta) -> str:
    """The shortest spelling parse_duration reads back: 36h, 7d, 90m, 0.5s; none for no limit."""
    if value == NO_LIMIT:
        return "none"
    seconds = value.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
