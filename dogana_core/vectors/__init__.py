"""Identity vectors: the canonical form and identity of a set of values, for other implementations.

identity.json is a list of cases {name, kind, wire, identity_json, identity}: wire is the value's
to_dict() form, identity_json its identity form in RFC 8785, identity the lowercase hex SHA-256 of
those UTF-8 bytes. An implementation that reads every wire and writes every identity_json and
identity byte for byte agrees with this one on every identity, and so on every publication chain.
README.md beside this file states the canonical forms the vectors fix.

The cases cover every wire kind and every tag: dates, datetimes with and without microseconds,
durations integral and fractional, integers past 2**53, strings beyond ASCII and beyond the BMP.
Regenerate with `python -m dogana_core.vectors`; a test recomputes every case from its wire.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dogana_core.wire import Wire

if TYPE_CHECKING:
    from dogana_core.contract import Contract

__all__ = ["cases", "example_values", "load_vectors", "vectors_text", "write"]

FILE = "identity.json"


def example_values() -> list[tuple[str, Wire]]:
    """(name, value) pairs: the values the vectors fix, built through the public API."""
    from dogana_core.claims import NO_LIMIT
    from dogana_core.contract import column_hash
    from dogana_core.gate import Check, Gate
    from dogana_core.ledger import Ledger
    from dogana_core.plan import Action, ActionKind, ApplyPlan
    from dogana_core.planner import Requirement, next_extraction, plan_delivery
    from dogana_core.region import Region
    from dogana_core.shape import Shape
    from dogana_core.values import DATETIME_MAX, DATETIME_MIN

    sunday = datetime(2026, 10, 18, 2, 0, tzinfo=UTC)
    monday = datetime(2026, 10, 19, 2, 0, 0, 250000, tzinfo=UTC)
    now = datetime(2026, 10, 19, 9, 30, tzinfo=UTC)
    content = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    orders = _contract(
        "orders",
        ("order_id",),
        {
            "full": Shape.complete(cost=10),
            "month": Shape.complete(window=True, window_size=timedelta(days=30), cost=2),
            "changes": Shape.changes(
                tombstones=True, lookback=timedelta(seconds=90, microseconds=250000), cost=0.5
            ),
        },
        window_column="order_date",
        cursor_column="updated_at",
        deleted_column="is_deleted",
        types={
            "order_id": "int",
            "order_date": "date",
            "updated_at": "datetime",
            "is_deleted": "bool",
        },
        schema_hash=column_hash(
            [
                ("order_id", "int"),
                ("order_date", "date"),
                ("amount", "decimal(12,2)"),
                ("updated_at", "datetime"),
                ("is_deleted", "bool"),
            ],
            deleted_column="is_deleted",
        ),
    )
    events = _contract(
        "events",
        (),
        {"append": Shape.changes(), "full": Shape.complete()},
        start_at=datetime(2020, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    )
    log = _contract(
        "log",
        ("seq",),
        {"full": Shape.complete(), "tail": Shape.changes(checkpoint="sequence")},
        types={"seq": "int"},
    )
    names = _contract(
        "names",
        ("name",),
        {"initials": Shape.complete(window=True, cost=0)},
        window_column="name",
        types={"name": "str"},
    )
    readings = _contract(
        "readings",
        ("sensor", "taken_at"),
        {"hour": Shape.changes(window=True, window_size=timedelta(microseconds=3_600_000_001))},
        window_column="taken_at",
        types={"sensor": "str", "taken_at": "datetime"},
    )
    feed = _contract(
        "documents",
        ("doc_id",),
        {"full": Shape.complete(), "feed": Shape.changes(checkpoint="generation")},
        types={"doc_id": "str"},
    )

    month = orders.manifest(
        "month",
        sunday,
        window=(date(2026, 9, 19), date(2026, 10, 18)),
        rows=1200,
        content_hash=content,
    )
    changes = orders.manifest("changes", monday, since=sunday, rows=40, tombstones=2)
    whole = orders.manifest("full", sunday, rows=10_000, generation="snapshot-2026-10-18")
    tail = log.manifest("tail", sunday, since=2**53 - 1, generation=2**60, rows=2**53)
    initials = names.manifest(
        "initials", sunday, window=("caf\u00e9", '\U0001f600 \u2028\x1f"\\'), rows=3
    )
    hour = readings.manifest(
        "hour",
        monday,
        window=(datetime(2026, 10, 19, 1, 0, 0, 1, tzinfo=UTC), DATETIME_MAX),
        since=DATETIME_MIN,
    )
    append = events.manifest("append", sunday, since=events.start_at, rows=7)
    forever = orders.manifest("month", sunday, window=(date.min, date.max))
    generation = feed.manifest("feed", monday, since="g\u00f61", generation="g\u00f62", rows=1)

    ledger = Ledger.new(orders)
    accepted = Gate.evaluate(
        ledger,
        month,
        (Check("rows", True, "1200 rows, as declared"), Check("content_hash", True)),
        now=now,
        source="s3://drop/orders/2026-10-18.parquet",
    )
    after = ledger.follow(accepted)
    rejected = Gate.evaluate(
        after, orders.manifest("changes", monday, since=sunday, rows=3), now=now
    )
    late = Gate.evaluate(after, month.replace(rows=1), now=now)
    assert accepted.transition is not None

    planned = plan_delivery(after, Requirement("orders", monday))
    assert planned is not None
    rolling = next_extraction(after, "month", monday)

    return [
        ("Shape at every default: only its kind is identified", Shape()),
        ("Shape: a 30-day rolling window, an integral $seconds", orders.shape("month")),
        (
            "Shape: tombstones, a fractional $seconds lookback, a float cost",
            orders.shape("changes"),
        ),
        ("Shape: a datetime width with a microsecond, cost 0 kept", readings.shape("hour")),
        ("Contract: keyed, date window, cursor, deleted column, column hash", orders),
        ("Contract: keyless appends from start_at, with microseconds", events),
        ("Contract: a sequence table", log),
        ("Contract: a composite key and a datetime window", readings),
        ("Manifest: a complete date window with content_hash", month),
        ("Manifest: timestamp changes, produced_at with microseconds", changes),
        ("Manifest: a complete whole-table read issuing a generation", whole),
        ("Manifest: sequence positions past 2**53, exact on the wire", tail),
        ("Manifest: strings beyond ASCII and the BMP, escapes", initials),
        ("Manifest: datetime window bounds at microseconds and the domain's end", hour),
        ("Manifest: the first keyless append, since = start_at", append),
        ("Manifest: a window over the whole date domain", forever),
        ("Manifest: a generation feed with non-ASCII generations", generation),
        ("Region: the whole domain, unknown (every field at its default)", Region()),
        (
            "Region: a closed date window [a, b] is written [a, successor(b))",
            Region.closed(date(2026, 9, 19), date(2026, 10, 18), sunday, sunday),
        ),
        (
            "Region: a window reaching date.max is unbounded above",
            Region.closed(date(2026, 10, 19), date.max, monday, sunday),
        ),
        (
            'Region: the domain minimum "" is written unbounded',
            Region.span("", "m", sunday, sunday),
        ),
        (
            "Region: datetime ends with microseconds",
            Region.closed(
                datetime(2026, 10, 19, 1, 0, 0, 1, tzinfo=UTC),
                datetime(2026, 10, 19, 2, 0, tzinfo=UTC),
                monday,
                monday,
            ),
        ),
        ("Ledger: a new ledger, one unknown region", ledger),
        ("Ledger: after one accepted complete window", after),
        ("Check: a receiver's passed check with no detail", Check("content_hash", True)),
        (
            "Check: a failed check with a non-ASCII detail",
            Check("rows", False, "attendu 3, re\u00e7u 2"),
        ),
        ("Action: replace_window names its closed window", accepted.transition.plan.actions[0]),
        ("Action: append names no key", Action(ActionKind.APPEND)),
        ("ApplyPlan: upsert then tombstone", ApplyPlan.for_delivery(orders, changes)),
        ("Transition: the plan and the regions over the coverage", accepted.transition),
        ("Receipt: an acceptance", accepted),
        ("Receipt: its replay, identified as the acceptance", accepted.replay()),
        ("Receipt: a changes read over unknown regions, rejected; the head is kept", rejected),
        ("Receipt: a late complete window rejected by the transition", late),
        ("Claims: limit 2 days, at now", after.claims(now, limit=timedelta(days=2))),
        ("Claims: no limit is written null", after.claims(now, limit=NO_LIMIT)),
        (
            "RegionClaim: one region's state",
            after.claims(now, limit=timedelta(days=2)).regions[1],
        ),
        ("Requirement: complete as of an instant", Requirement("orders", monday)),
        (
            "Requirement: exact over a window",
            Requirement.exact("orders", sunday, window=(date(2026, 9, 19), date(2026, 10, 18))),
        ),
        ("ExtractionRequest: plan_delivery's cheapest read", planned),
        ("ExtractionRequest: next_extraction's rolling window", rolling),
    ]


def _contract(table: str, key: tuple[str, ...], shapes: dict[str, Any], **options: Any) -> Contract:
    """A Contract from plain mappings, which its constructor accepts and keeps as sorted pairs."""
    from dogana_core.contract import Contract

    named: Any = shapes
    return Contract(table, key, named, **options)


def cases() -> list[dict[str, Any]]:
    """The vectors: one case per example value."""
    out = []
    for name, value in example_values():
        out.append(
            {
                "name": name,
                "kind": type(value).__name__,
                "wire": value.to_dict(),
                "identity_json": value.identity_json(),
                "identity": value.identity,
            }
        )
    return out


def vectors_text() -> str:
    """The file form of the vectors: two-space indents, ASCII escapes, one trailing newline."""
    return json.dumps(cases(), indent=2, ensure_ascii=True) + "\n"


def load_vectors() -> list[dict[str, Any]]:
    """The shipped vectors."""
    text = resources.files(__name__).joinpath(FILE).read_text(encoding="utf-8")
    loaded: list[dict[str, Any]] = json.loads(text)
    return loaded


def write(directory: Path | None = None) -> bool:
    """Write identity.json into directory (this package's folder by default); True if changed."""
    path = (directory if directory is not None else Path(__file__).resolve().parent) / FILE
    text = vectors_text()
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True
