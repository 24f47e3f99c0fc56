"""Hypothesis strategies for the part-1 wire kinds: Shapes, Contracts and Manifests.

Every value drawn here is one the constructors accept; contract_and_manifest draws a manifest
that also fits its contract. Datetimes come in several offsets and zones (DST folds included),
so the tests that use these strategies exercise UTC normalisation too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from dogana_core import Checkpoint, Contract, Coverage, Deletions, Manifest, Shape
from dogana_core.values import DATETIME_MAX, DATETIME_MIN

ZONES = [
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(hours=-8)),
    timezone(timedelta(hours=14)),
    ZoneInfo("Europe/Rome"),
    ZoneInfo("America/New_York"),
    ZoneInfo("Australia/Lord_Howe"),  # a half-hour DST shift
]

aware_datetimes = st.datetimes(
    min_value=datetime(2, 1, 1),
    max_value=datetime(9998, 12, 31),
    timezones=st.sampled_from(ZONES),
) | st.sampled_from(
    [DATETIME_MIN, DATETIME_MAX, datetime(2026, 10, 25, 2, 30, tzinfo=ZONES[4], fold=1)]
)

safe_integers = st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)

# A duration the wire can write: whole seconds, or microseconds while a float of seconds
# still resolves them (below 2**32 seconds).
durations = st.one_of(
    st.integers(min_value=1, max_value=timedelta.max // timedelta(seconds=1)).map(
        lambda s: timedelta(seconds=s)
    ),
    st.integers(min_value=1, max_value=2**32 * 10**6).map(lambda us: timedelta(microseconds=us)),
    st.sampled_from([timedelta(days=30), timedelta(microseconds=1), timedelta(seconds=0.5)]),
)
whole_days = st.integers(min_value=1, max_value=999_999_999).map(lambda d: timedelta(days=d))

costs = st.one_of(
    st.integers(min_value=0, max_value=2**53 - 1),
    st.floats(min_value=0, max_value=1e300, allow_nan=False, allow_infinity=False),
)

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
shape_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}", fullmatch=True)
hex_digests = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
nonempty_text = st.text(min_size=1, max_size=20)

TEN_SHAPES = [
    (Coverage.TABLE, Deletions.ABSENCE, Checkpoint.NONE),
    (Coverage.WINDOW, Deletions.ABSENCE, Checkpoint.NONE),
    *[
        (Coverage.TABLE, deletions, checkpoint)
        for checkpoint in (Checkpoint.TIMESTAMP, Checkpoint.GENERATION, Checkpoint.SEQUENCE)
        for deletions in (Deletions.NONE, Deletions.TOMBSTONE)
    ],
    (Coverage.WINDOW, Deletions.NONE, Checkpoint.TIMESTAMP),
    (Coverage.WINDOW, Deletions.TOMBSTONE, Checkpoint.TIMESTAMP),
]


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    """Any Shape the constructor accepts, on its own (contract rules aside)."""
    coverage, deletions, checkpoint = draw(st.sampled_from(TEN_SHAPES))
    window_size = draw(st.none() | durations) if coverage is Coverage.WINDOW else None
    lookback = (
        draw(durations)
        if checkpoint is Checkpoint.TIMESTAMP and draw(st.booleans())
        else timedelta(0)
    )
    return Shape(
        coverage=coverage,
        deletions=deletions,
        checkpoint=checkpoint,
        cost=draw(costs),
        window_size=window_size,
        lookback=lookback,
    )


def values_of(kind: str) -> st.SearchStrategy[Any]:
    """Key, window or bound values of a logical type."""
    return {
        "int": safe_integers,
        "str": st.text(max_size=12),
        "date": st.dates(),
        "datetime": aware_datetimes,
    }[kind]


@st.composite
def contracts(draw: st.DrawFn) -> Contract:
    """A contract satisfying every rule of Contract and shapes."""
    columns = iter(draw(st.lists(identifiers, min_size=7, max_size=7, unique_by=str.lower)))
    keyed = draw(st.booleans())
    key = tuple(next(columns) for _ in range(draw(st.integers(1, 3)))) if keyed else ()
    types: dict[str, str] = {
        column: draw(st.sampled_from(["int", "str", "date", "datetime"])) for column in key
    }
    position = draw(st.sampled_from([Checkpoint.GENERATION, Checkpoint.SEQUENCE]))
    allowed = [
        combination
        for combination in TEN_SHAPES
        if combination[2] in (Checkpoint.NONE, Checkpoint.TIMESTAMP, position)
        and (keyed or combination[2] is Checkpoint.NONE or combination == TEN_SHAPES[2])
    ]
    chosen = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=4))
    window_column = next(columns) if any(c[0] is Coverage.WINDOW for c in chosen) else None
    if window_column is not None:
        types[window_column] = draw(st.sampled_from(["int", "str", "date", "datetime"]))
    deleted_column = next(columns) if any(c[1] is Deletions.TOMBSTONE for c in chosen) else None
    if deleted_column is not None:
        types[deleted_column] = "bool"
    cursor_column = next(columns) if draw(st.booleans()) else None
    if cursor_column is not None:
        types[cursor_column] = draw(st.sampled_from(["int", "datetime"]))
    window_type = types.get(window_column or "")
    named: dict[str, Shape] = {}
    for coverage, deletions, checkpoint in chosen:
        window_size = None
        if (
            coverage is Coverage.WINDOW
            and window_type in ("date", "datetime")
            and draw(st.booleans())
        ):
            window_size = draw(whole_days if window_type == "date" else durations)
        lookback = timedelta(0)
        if keyed and checkpoint is Checkpoint.TIMESTAMP and draw(st.booleans()):
            lookback = draw(durations)
        shape = Shape(
            coverage=coverage,
            deletions=deletions,
            checkpoint=checkpoint,
            cost=draw(costs),
            window_size=window_size,
            lookback=lookback,
        )
        named[draw(shape_names.filter(lambda n: n not in named))] = shape
    return Contract(
        draw(identifiers),
        key,
        named,
        window_column=window_column,
        cursor_column=cursor_column,
        deleted_column=deleted_column,
        types=types,
        schema_hash=draw(st.none() | hex_digests),
        start_at=draw(st.none() | aware_datetimes),
    )


@st.composite
def contract_and_manifest(draw: st.DrawFn) -> tuple[Contract, Manifest]:
    """A contract and a manifest that fits it under Manifest.check."""
    contract = draw(contracts())
    name, shape = draw(st.sampled_from(contract.shapes))
    produced_at = draw(aware_datetimes)
    window = None
    if shape.is_window:
        assert contract.window_type is not None
        bounds = draw(st.lists(values_of(contract.window_type), min_size=2, max_size=2))
        low, high = sorted(bounds, key=_utc_key)
        window = (low, high)
    since: Any = None
    generation: Any = None
    if shape.checkpoint is Checkpoint.TIMESTAMP:
        since = draw(aware_datetimes)
    elif shape.checkpoint is Checkpoint.GENERATION:
        since, generation = draw(nonempty_text), draw(nonempty_text)
    elif shape.checkpoint is Checkpoint.SEQUENCE:
        since = draw(safe_integers)
        generation = draw(st.integers(min_value=since, max_value=2**53 - 1))
    elif not shape.is_window and draw(st.booleans()):
        generation = draw(safe_integers if contract.position_type is int else nonempty_text)
    counts = st.integers(min_value=0, max_value=2**53 - 1)
    rows = draw(counts)
    tombstones = draw(counts) if shape.has_tombstones else 0
    manifest = Manifest(
        contract.table,
        name,
        produced_at,
        window=window,
        since=since,
        generation=generation,
        rows=rows,
        schema_hash=contract.schema_hash if contract.schema_hash else draw(st.none() | hex_digests),
        tombstones=tombstones,
        content_hash=draw(st.none() | hex_digests),
    )
    if _interval_is_empty(manifest):
        manifest = manifest.replace(rows=0, tombstones=0)
    manifest.check(contract)
    return contract, manifest


def _interval_is_empty(manifest: Manifest) -> bool:
    """A zero-length changes interval: (g, g] of a sequence, (t, t] of a timestamp read."""
    since = manifest.since
    if since is None:
        return False
    if isinstance(since, datetime):
        return since == manifest.produced_at
    return since == manifest.generation


def _utc_key(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, datetime) else value


@st.composite
def manifests(draw: st.DrawFn) -> Manifest:
    return draw(contract_and_manifest())[1]


def wire_values() -> st.SearchStrategy[Any]:
    """A Shape, a Contract or a Manifest."""
    return st.one_of(shapes(), contracts(), manifests())


def shifted(value: datetime, hours: int) -> datetime | None:
    """The same instant at another fixed offset, or None when that falls outside Python's range."""
    try:
        return value.astimezone(timezone(timedelta(hours=hours)))
    except OverflowError:
        return None
