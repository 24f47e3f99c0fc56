"""The connector conformance suite against mariadb_binlog on the real MariaDB, and a log read cut
by its limit inside a transaction."""

from __future__ import annotations

import pyarrow as pa
import pytest
from cdc_pipeline import MariaTable, read_in_cuts

from dogana_provider.connectors import MariadbBinlogConnector
from dogana_provider.connectors.conformance import conformance

pytestmark = pytest.mark.mariadb


def test_the_binlog_connector_passes_every_conformance_check(binlog_source: MariaTable) -> None:
    binlog_source.execute(
        f"INSERT INTO `{binlog_source.table}` VALUES (3, 3, NOW(6), 'three', 1), "
        "(1, 1, NOW(6), 'one', 1), (2, NULL, NULL, '', NULL)"
    )
    config = binlog_source.config()
    config.pop("kind")
    report = conformance(MariadbBinlogConnector(config))
    assert len(report.checks) == 17
    assert report.failed == (), [vars(c) for c in report.checks if not c.passed]
    assert "a complete table read" in report.check("proof_declares_a_shape").detail


def test_a_binlog_read_cut_inside_a_transaction_resumes_after_its_last_row_once(
    binlog_source: MariaTable,
) -> None:
    table = binlog_source.table
    config = binlog_source.config()
    config.pop("kind")
    connector = MariadbBinlogConnector(config)
    snapshot = connector.read(table)
    list(snapshot)
    binlog_source.execute("START TRANSACTION")
    for key in (1, 2, 3):
        binlog_source.execute(f"INSERT INTO `{table}` VALUES ({key}, 1, NOW(6), 'n', 1)")
    binlog_source.execute(f"DELETE FROM `{table}` WHERE id = 2")
    binlog_source.execute("COMMIT")
    binlog_source.execute(f"INSERT INTO `{table}` VALUES (4, 1, NOW(6), 'n', 1)")
    position = snapshot.checkpoint()
    whole = pa.Table.from_batches(list(connector.read(table, since=position)))
    assert whole.num_rows == 5

    parts, cuts = read_in_cuts(connector, table, position, (1, 2, None))
    assert [part.num_rows for part in parts] == [1, 2, 2]
    assert pa.concat_tables(parts).equals(whole), "no row twice, none skipped"
    assert cuts == [None, None, None], "a cut read, and a resume inside a transaction, prove none"
