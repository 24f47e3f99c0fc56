"""What a binlog read refuses, by name, telling the person to run a full read; what is published
stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import COLUMNS, MariaTable, log_connector, refused, started, write_pipeline

from dogana_core.manifest import Manifest
from dogana_provider.connectors.mariadb_binlog import BinlogPosition, unfit

pytestmark = pytest.mark.mariadb


def test_a_truncate_of_another_table_is_no_refusal(binlog_source: MariaTable) -> None:
    reader, position = started(binlog_source)
    other = f"{binlog_source.table}_other"
    binlog_source.execute(f"CREATE TABLE `{other}` (id INT)")
    try:
        binlog_source.execute(f"TRUNCATE TABLE `{other}`")
        assert list(reader.read(binlog_source.table, since=position)) == []
    finally:
        binlog_source.execute(f"DROP TABLE `{other}`")


def test_a_column_added_in_the_log_refuses_the_read_as_relation_changed(
    binlog_source: MariaTable,
) -> None:
    _, position = started(binlog_source)
    binlog_source.execute(f"ALTER TABLE `{binlog_source.table}` ADD COLUMN extra INT DEFAULT 7")
    undeclared = log_connector(binlog_source)
    assert "extra added" in str(refused(undeclared, binlog_source.table, position))
    # Declared as the table is now, the ALTER in the log still refuses: its default was filled
    # in without a row event.
    declared = log_connector(binlog_source, columns={**COLUMNS, "extra": "int"})
    error = refused(declared, binlog_source.table, position)
    assert error.rule == "relation_changed" and "ALTER" in str(error)


def test_a_column_retyped_between_reads_refuses_the_read_as_relation_changed(
    binlog_source: MariaTable,
) -> None:
    reader, position = started(binlog_source)
    binlog_source.execute(f"ALTER TABLE `{binlog_source.table}` MODIFY amount DECIMAL(14,4)")
    error = refused(reader, binlog_source.table, position)
    assert error.rule == "relation_changed" and "amount retyped" in str(error)


def test_a_table_map_unlike_the_table_refuses_the_read_as_relation_changed(
    binlog_source: MariaTable,
) -> None:
    """Rows logged under other columns than the table's now (the log read after the change)."""
    _, position = started(binlog_source)
    binlog_source.execute(f"INSERT INTO `{binlog_source.table}` VALUES (2, 2, NOW(6), 'two', 0)")
    binlog_source.execute(f"ALTER TABLE `{binlog_source.table}` MODIFY name VARCHAR(20)")
    declared = log_connector(binlog_source)  # name is str either way: only the log tells
    error = refused(declared, binlog_source.table, position)
    assert error.rule == "relation_changed" and "name retyped" in str(error)


def test_rows_logged_without_every_column_refuse_the_read_as_partial_row_image(
    binlog_source: MariaTable,
) -> None:
    """A session may log with binlog_row_image=MINIMAL while the server's is FULL: its update
    carries the changed column only, which must not be delivered with the others as nulls."""
    reader, position = started(binlog_source)
    binlog_source.execute("SET SESSION binlog_row_image = 'MINIMAL'")
    try:
        binlog_source.execute(f"UPDATE `{binlog_source.table}` SET name = 'minimal' WHERE id = 1")
    finally:
        binlog_source.execute("SET SESSION binlog_row_image = 'FULL'")
    error = refused(reader, binlog_source.table, position)
    assert error.rule == "partial_row_image"
    assert f"{binlog_source.table}: the log holds rows of some columns only" in str(error)


def test_a_position_in_a_purged_binlog_file_refuses_the_read_as_binlog_purged(
    binlog_source: MariaTable,
) -> None:
    """The shared server's binlogs are not purged here: the position names a file before the
    first one it keeps, as a purge leaves it."""
    reader, _ = started(binlog_source)
    first = binlog_source.execute("SHOW BINARY LOGS").fetchone()[0]
    gone = BinlogPosition(BinlogPosition.of_file(first, 4).number - 1, 4)
    error = refused(reader, binlog_source.table, gone.as_int())
    assert error.rule == "binlog_purged" and "binlog_expire_logs_seconds" in str(error)


def test_a_server_without_full_row_images_is_unfit() -> None:
    fit = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL"}
    assert unfit(fit) is None
    for name, wrong in (
        ("log_bin", "OFF"),
        ("binlog_format", "MIXED"),
        ("binlog_row_image", "MINIMAL"),
        ("log_bin_compress", "ON"),
    ):
        assert f"{name} is {wrong}, not " in str(unfit({**fit, name: wrong}))
    assert unfit({**fit, "log_bin_compress": "OFF"}) is None  # MySQL has no log_bin_compress


def test_health_reports_the_binlog_and_its_retention(binlog_source: MariaTable) -> None:
    health = log_connector(binlog_source).health()
    assert health.ok and "kept for" in health.detail


def test_a_refused_read_in_the_pipeline_keeps_what_is_published(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binlog_source: MariaTable
) -> None:
    source = binlog_source
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(f"INSERT INTO `{source.table}` VALUES (1, 1, NOW(6), 'one', true)")
    first = pipeline.run()
    assert set(states(first).values()) == {"success"}
    before, ledger = pipeline.published(), pipeline.ledger()
    source.execute(f"TRUNCATE TABLE `{source.table}`")
    run = pipeline.run()
    assert states(run)["extract"] == "failed" and states(run)["publish"] != "success"
    assert pipeline.published() == before and pipeline.ledger() == ledger
    generation = Manifest.from_dict(xcom(first, "extract")["manifest"]).generation
    assert pipeline.ledger().generation == generation
