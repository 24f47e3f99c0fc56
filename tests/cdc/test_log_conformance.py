"""The pg_logical connector against the conformance suite, on a real table and slot."""

from __future__ import annotations

import pytest
from cdc_pipeline import COLUMNS, PgTable, read_in_cuts

from dogana_provider.connectors import PgLogicalConnector
from dogana_provider.connectors.conformance import conformance

pytestmark = pytest.mark.postgres


def test_the_log_connector_passes_every_conformance_check(source: PgTable) -> None:
    source.execute(
        f"INSERT INTO \"{source.table}\" VALUES (3, 3, now(), 'three', true), "
        "(1, 1, now(), 'one', false), (2, NULL, NULL, '', NULL)"
    )
    config = source.config(columns=COLUMNS)
    config.pop("kind")
    report = conformance(PgLogicalConnector(config))
    assert report.failed == (), [vars(c) for c in report.checks if not c.passed]
    assert len(report.checks) == 17


def test_a_log_read_cut_inside_a_transaction_resumes_after_its_last_row_once(
    source: PgTable,
) -> None:
    import pyarrow as pa

    config = source.config(columns=COLUMNS)
    config.pop("kind")
    connector = PgLogicalConnector(config)
    snapshot = connector.read(source.table)
    list(snapshot)
    with source.db.transaction():
        for key in (1, 2, 3):
            source.execute(f"INSERT INTO \"{source.table}\" VALUES ({key}, 1, now(), 'n', true)")
        source.execute(f'DELETE FROM "{source.table}" WHERE id = 2')
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (4, 1, now(), 'n', true)")
    position = snapshot.checkpoint()
    whole = pa.Table.from_batches(list(connector.read(source.table, since=position)))
    assert whole.num_rows == 5

    parts, cuts = read_in_cuts(connector, source.table, position, (1, 2, None))
    assert [part.num_rows for part in parts] == [1, 2, 2]
    assert pa.concat_tables(parts).equals(whole), "no row twice, none skipped"
    assert cuts == [None, None, None], "a cut read, and a resume inside a transaction, prove none"
