"""A MariaDB table delivered from its binlog through the real operators (plan, extract with the
mariadb_binlog connector, gate, publish): a full read in a consistent snapshot at a known binlog
position, then the log from exactly there, each read from the position the receiver published."""

from __future__ import annotations

import threading
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline import MariaTable, comparable, delivered, write_pipeline

from dogana_provider.connectors.mariadb_binlog import BinlogPosition

pytestmark = [pytest.mark.mariadb, pytest.mark.airflow]


def clock(source: MariaTable) -> Any:
    return source.execute("SELECT UTC_TIMESTAMP(6)").fetchone()[0].replace(tzinfo=UTC)


def test_a_full_read_at_the_snapshots_binlog_position_then_the_log_publishes_each_change_once(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binlog_source: MariaTable
) -> None:
    source = binlog_source
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(
        f"INSERT INTO `{source.table}` VALUES (1, 10.50, NOW(6), %s, true), "
        "(2, NULL, NULL, '', false), (3, 3, NOW(6), 'three', NULL)",
        ("ünï",),
    )
    inserted = clock(source)
    first, receipt = delivered(pipeline.run())
    assert (first.shape, first.rows, first.tombstones) == ("snapshot", 3, 0)
    assert inserted < first.produced_at <= receipt.received_at
    head = source.execute("SHOW MASTER STATUS").fetchone()
    assert first.generation <= BinlogPosition.of_file(head[0], head[1]).as_int()
    assert comparable(pipeline.published()) == comparable(source.rows())

    source.execute(f"UPDATE `{source.table}` SET name = 'one' WHERE id = 1")
    source.execute(f"DELETE FROM `{source.table}` WHERE id = 3")
    source.execute(f"UPDATE `{source.table}` SET id = 20 WHERE id = 2")
    source.execute(f"INSERT INTO `{source.table}` VALUES (4, -1.25, NOW(6), 'four', true)")
    last_write = clock(source)
    changes, receipt = delivered(pipeline.run())
    assert (changes.shape, changes.since) == ("log", first.generation)
    assert (changes.rows, changes.tombstones) == (3, 2)  # 1, 20, 4 live; 2 and 3 deleted
    assert comparable(pipeline.published()) == comparable(source.rows())

    # The dates are true: every write before the read is in it, on the source's clock.
    assert last_write < changes.produced_at <= receipt.received_at
    claims = pipeline.ledger().claims(changes.produced_at, limit=timedelta.max)
    assert claims.exact_as_of == changes.produced_at
    assert pipeline.ledger().generation == changes.generation > first.generation


def test_writes_during_the_snapshot_are_in_it_or_in_the_log_never_both_never_neither(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binlog_source: MariaTable
) -> None:
    import MySQLdb

    source = binlog_source
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    values = ", ".join(f"({i}, {i}, NOW(6), 'row {i}', {i % 2})" for i in range(1, 201))
    source.execute(f"INSERT INTO `{source.table}` VALUES {values}")
    stop = threading.Event()

    def write() -> None:
        db = MySQLdb.connect(host="127.0.0.1", user="root", db="test", autocommit=True)
        cursor, step = db.cursor(), 0
        try:
            while not stop.is_set():
                step += 1
                cursor.execute(
                    f"UPDATE `{source.table}` SET amount = amount + 1 WHERE id = %s",
                    (step % 200 + 1,),
                )
                cursor.execute(
                    f"INSERT INTO `{source.table}` VALUES (%s, 0, NOW(6), 'new', false) "
                    "ON DUPLICATE KEY UPDATE name = 'again'",
                    (1000 + step % 50,),
                )
                cursor.execute(
                    f"DELETE FROM `{source.table}` WHERE id = %s", (1000 + (step + 25) % 50,)
                )
        finally:
            db.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        first, _ = delivered(pipeline.run())
        second, _ = delivered(pipeline.run())
    finally:
        stop.set()
        writer.join()
    third, _ = delivered(pipeline.run())
    assert first.shape == "snapshot" and second.since == first.generation
    assert third.since == second.generation
    assert comparable(pipeline.published()) == comparable(source.rows())
