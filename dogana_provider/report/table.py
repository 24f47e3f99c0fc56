"""How dogana prints for a person at a terminal: one table layout, counts, instants, ages.

Every table the command line, the freshness report and ``dogana status`` print goes through
text_table, so they read alike: a header, a rule, one row per line, columns two spaces apart,
numbers left-aligned like text. tabulate's "simple" layout is this one, except that it pads
every header by two blanks more than its column needs (its MIN_PADDING, a module global no call
can change), which widens a narrow column of counts threefold; so the few lines are written here.

An instant a person reads is printed by ``when``, to the second. The one exception is output a
person checks against wire documents (``dogana claims`` and ``dogana fold`` on receipt files, a
region's ends): ``wire_instant`` prints those exactly as the wire spells them, since rounding to
the second could show two different instants as one. ``iso`` is for values in JSON and logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dogana_core.region import Region


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, indent: str = "") -> str:
    """Columns padded to their widest cell, a rule under the header, trailing blanks dropped."""
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(cell) for cell in column) for column in zip(*cells, strict=True)]

    def line(row: Sequence[str]) -> str:
        return indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    rule = ["-" * width for width in widths]
    return "\n".join([line(cells[0]), line(rule), *(line(row) for row in cells[1:])])


def plural(count: int, one: str, many: str | None = None) -> str:
    """A count and its noun: 1 row, 2 rows; 1 row has, 3 rows have (many given)."""
    return f"{count} {one}" if count == 1 else f"{count} {many or one + 's'}"


def when(value: datetime | None) -> str:
    """A UTC instant to the second, as a person reads it: 2026-10-19 02:00:00; '-' when there
    is none. The way to print an instant for people; wire_instant is for wire documents."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def wire_instant(value: datetime | None) -> str:
    """A UTC instant exactly, in RFC 3339 with Z, as the wire spells it: 2026-10-19T02:00:00Z;
    '-' when there is none. For output read beside receipts and ledgers (what a claim is as of,
    a region's ends), where a second's rounding would make two instants look equal."""
    if value is None:
        return "-"
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def span(region: Region) -> str:
    """A region as the half-open interval it is: [low, high), unbounded ends as -inf and +inf."""

    def end(value: Any, unbounded: str) -> str:
        if value is None:
            return unbounded
        if isinstance(value, datetime):
            return wire_instant(value)
        return repr(value) if isinstance(value, str) else str(value)

    opening = "(" if region.low is None else "["
    return f"{opening}{end(region.low, '-inf')}, {end(region.high, '+inf')})"


def iso(value: Any) -> str:
    """A date or an instant in ISO 8601, as a log line states it; anything else as it is."""
    return value.isoformat() if isinstance(value, date | datetime) else str(value)


def iso_window(window: Sequence[Any]) -> str:
    """A window's two ends as people read them: [2026-11-03, 2026-11-04]."""
    return f"[{', '.join(iso(end) for end in window)}]"


def age(value: timedelta | None) -> str:
    """A duration in its two largest units: 1d 2h, 2h 05m, 3m 07s, 12s; '-' when there is none."""
    if value is None:
        return "-"
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"
