"""Values from the log are the values the snapshot path reads: a table's state built from the log
equals the same table read in one snapshot, whatever the writes (numeric scale, microseconds
with zone, NULL apart from '', unicode, bool, bigints past 2**53)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from cdc_pipeline import PgTable, assert_log_folds_to_the_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dogana_provider.connectors import PgLogicalConnector

pytestmark = pytest.mark.postgres

TYPED = "n numeric(20,6), t timestamptz, s text, b boolean, big bigint, d date, f double precision"
NAMES = ("id", "n", "t", "s", "b", "big", "d", "f")

values = st.tuples(
    st.none() | st.decimals(places=6, min_value=-(10**13), max_value=10**13, allow_nan=False),
    st.none()
    | st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ),
    st.none() | st.just("") | st.text(st.characters(blacklist_categories=("Cs",), min_codepoint=1)),
    st.none() | st.booleans(),
    st.none() | st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**53 + 1, -(2**53) - 1]),
    st.none() | st.dates(),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
)
writes = st.lists(
    st.tuples(st.sampled_from(["upsert", "delete"]), st.integers(0, 12), values), max_size=12
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(writes, min_size=1, max_size=3))
def test_state_built_from_the_log_equals_the_snapshot_read(
    source: PgTable, batches: list[list[tuple[str, int, tuple[Any, ...]]]]
) -> None:
    source.execute(f'DROP TABLE IF EXISTS "{source.table}"')
    source.execute(f'DROP PUBLICATION IF EXISTS "{source.slot}"')
    source.execute(f'CREATE TABLE "{source.table}" (id bigint PRIMARY KEY, {TYPED})')
    reader = PgLogicalConnector(
        {"conn_id": source.conn_id, "table": source.table, "slot": source.slot}
    )
    marks = ", ".join(["%s"] * len(NAMES))
    updates = ", ".join(f"{n} = excluded.{n}" for n in NAMES[1:])
    upsert = (
        f'INSERT INTO "{source.table}" VALUES ({marks}) ON CONFLICT (id) DO UPDATE SET {updates}'
    )
    assert_log_folds_to_the_snapshot(reader, source, batches, upsert)


def test_edge_values_from_the_log_are_exact(source: PgTable) -> None:
    source.execute(f'DROP TABLE "{source.table}"')
    source.execute(f'CREATE TABLE "{source.table}" (id bigint PRIMARY KEY, {TYPED})')
    reader = PgLogicalConnector(
        {"conn_id": source.conn_id, "table": source.table, "slot": source.slot}
    )
    instant = datetime(2026, 3, 29, 0, 59, 59, 999_999, tzinfo=UTC)
    rows = [
        (1, Decimal("1.100000"), instant, "", False, 2**53 + 1, None, -0.0),
        (2, None, None, None, None, -(2**63), None, None),
        (
            3,
            Decimal("-99999999999999.999999"),
            instant,
            "ünï 😀 \\ '\"",
            True,
            2**63 - 1,
            None,
            1e-300,
        ),
    ]
    with reader:
        reading = reader.read(source.table)
        list(reading)
        for row in rows:
            source.execute(f'INSERT INTO "{source.table}" VALUES ({", ".join(["%s"] * 8)})', row)
        changes = reader.read(source.table, since=reading.proof().position)
        found = {r["id"]: r for b in changes for r in b.to_pylist()}
    for row in rows:
        got = found[row[0]]
        assert tuple(got[n] for n in NAMES) == row
    assert str(found[1]["n"]) == "1.100000" and found[1]["s"] == "" and found[2]["s"] is None


def test_a_log_value_no_delivery_can_hold_is_refused_naming_it(source: PgTable) -> None:
    from dogana_provider.connectors import ConnectorError

    reader = PgLogicalConnector(
        {"conn_id": source.conn_id, "table": source.table, "slot": source.slot}
    )
    with reader:
        reading = reader.read(source.table)
        list(reading)
        source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, 'infinity', 'x', true)")
        source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 1, now(), 'y', true)")
        with pytest.raises(ConnectorError, match="'infinity' in the log is no datetime"):
            list(reader.read(source.table, since=reading.proof().position))
