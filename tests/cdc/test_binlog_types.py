"""Values from the binlog are the values the snapshot path reads: a MariaDB table's state built
from its log equals the same table read in one snapshot, whatever the writes (decimal scale,
DATETIME(6) microseconds, NULL apart from '', unicode, TINYINT as bool, unsigned INT, ENUM,
bigints past 2**53)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from cdc_pipeline import MariaTable, assert_log_folds_to_the_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dogana_provider.connectors import MariadbBinlogConnector

pytestmark = pytest.mark.mariadb

TYPED = (
    "n DECIMAL(20,6), t DATETIME(6), s TEXT, b BOOLEAN, big BIGINT, d DATE, f DOUBLE, "
    "u INT UNSIGNED, e ENUM('a', 'it''s')"
)
NAMES = ("id", "n", "t", "s", "b", "big", "d", "f", "u", "e")

values = st.tuples(
    st.none() | st.decimals(places=6, min_value=-(10**13), max_value=10**13, allow_nan=False),
    st.none() | st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    st.none() | st.just("") | st.text(st.characters(blacklist_categories=("Cs",), min_codepoint=1)),
    st.none() | st.integers(0, 1),
    st.none() | st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**53 + 1, -(2**53) - 1]),
    st.none() | st.dates(min_value=datetime(1000, 1, 1).date()),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
    st.none() | st.integers(0, 2**32 - 1),
    st.none() | st.sampled_from(["a", "it's"]),
)
writes = st.lists(
    st.tuples(st.sampled_from(["upsert", "delete"]), st.integers(0, 12), values), max_size=12
)


def recreate(source: MariaTable) -> MariadbBinlogConnector:
    source.execute(f"DROP TABLE IF EXISTS `{source.table}`")
    source.execute(f"CREATE TABLE `{source.table}` (id BIGINT PRIMARY KEY, {TYPED})")
    return MariadbBinlogConnector({"conn_id": source.conn_id, "table": source.table})


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(writes, min_size=1, max_size=3))
def test_state_built_from_the_binlog_equals_the_snapshot_read(
    binlog_source: MariaTable, batches: list[list[tuple[str, int, tuple[Any, ...]]]]
) -> None:
    source = binlog_source
    reader = recreate(source)
    marks = ", ".join(["%s"] * len(NAMES))
    updates = ", ".join(f"{n} = VALUES({n})" for n in NAMES[1:])
    upsert = f"INSERT INTO `{source.table}` VALUES ({marks}) ON DUPLICATE KEY UPDATE {updates}"
    assert_log_folds_to_the_snapshot(reader, source, batches, upsert)


def test_edge_values_from_the_binlog_are_exact(binlog_source: MariaTable) -> None:
    source = binlog_source
    reader = recreate(source)
    reader = MariadbBinlogConnector(
        {
            "conn_id": source.conn_id,
            "table": source.table,
            "columns": {
                "id": "int",
                "n": "decimal(20,6)",
                "t": "datetime",
                "s": "str",
                "b": "bool",
                "big": "int",
                "d": "date",
                "f": "float",
                "u": "int",
                "e": "str",
            },
        }
    )
    instant = datetime(2026, 3, 29, 0, 59, 59, 999_999)
    rows = [
        (1, Decimal("1.100000"), instant, "", 0, 2**53 + 1, None, -0.0, 2**32 - 1, "it's"),
        (2, None, None, None, None, -(2**63), None, None, None, None),
        (
            3,
            Decimal("-99999999999999.999999"),
            instant,
            "ünï 😀 \\ '\"",
            1,
            2**63 - 1,
            None,
            1e-300,
            0,
            "a",
        ),
    ]
    with reader:
        reading = reader.read(source.table)
        list(reading)
        for row in rows:
            source.execute(f"INSERT INTO `{source.table}` VALUES ({', '.join(['%s'] * 10)})", row)
        changes = reader.read(source.table, since=reading.proof().position)
        found = {r["id"]: r for b in changes for r in b.to_pylist()}
    expected = [
        tuple(
            (
                v.replace(tzinfo=UTC)
                if isinstance(v, datetime)
                else bool(v)
                if n == "b" and v is not None
                else v
            )
            for n, v in zip(NAMES, row, strict=True)
        )
        for row in rows
    ]
    for row in expected:
        assert tuple(found[row[0]][n] for n in NAMES) == row
    assert str(found[1]["n"]) == "1.100000" and found[1]["s"] == "" and found[2]["s"] is None
    assert found[1]["b"] is False and found[3]["b"] is True
