"""The conformance suite on MariaDB again, over connections that allow LOAD DATA LOCAL INFILE:
staging then loads each batch as a file (staging/mariadb.py's LocalInfile) instead of
executemany, and every rule holds the same, unstorable values and faults mid-publish included."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
import test_receiver_mariadb
from receiver_conformance import Connect
from receiver_deliveries import orders_contract, write_many

from dogana_provider import staging
from dogana_provider.delivery.files import BATCH_ROWS
from dogana_provider.dialects import MARIADB
from dogana_provider.staging import mariadb as mariadb_staging
from dogana_provider.staging.mariadb import LocalInfile, load_data_text

pytestmark = pytest.mark.mariadb


class TestMariaDBLocalInfile(test_receiver_mariadb.TestMariaDB):
    @pytest.fixture
    def connect(self, mariadb_url: str) -> Connect:
        return test_receiver_mariadb.connector(mariadb_url, local_infile=True)


def test_a_connection_that_allows_local_infile_stages_through_it(mariadb_url: str) -> None:
    """The suite above would pass through executemany too: make sure LOAD DATA ran."""
    connection = test_receiver_mariadb.connector(mariadb_url, local_infile=True)()
    table = "dogana_local_infile_probe"
    try:
        cursor = connection.cursor()
        cursor.execute(f"CREATE TEMPORARY TABLE {table} (n BIGINT, s TEXT, b BOOLEAN)")
        loader = LocalInfile(connection, MARIADB, table, "n, s, b", ["int", "str", "bool"])
        columns = [
            pa.array(["tab\there", "", None, "nul\x00x", "back\\slash"]),
            pa.array([True, False, None, True, False]),
        ]
        assert loader.load(cursor, range(1, 6), columns)
        cursor.execute(f"SELECT n, s, b FROM {table} ORDER BY n")
        assert cursor.fetchall() == (
            (1, "tab\there", 1),
            (2, "", 0),
            (3, None, None),
            (4, "nul\x00x", 1),
            (5, "back\\slash", 0),
        )
    finally:
        connection.close()


def test_batches_loaded_while_the_next_is_built_keep_their_rows_and_numbers(
    mariadb_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's text is built in a thread while the server loads the one before it: every
    row arrives once, numbered by its place in the file, and the thread did build them."""
    builders: list[str] = []

    def recorded(numbers: range, columns: Sequence[pa.Array]) -> pa.Buffer:
        builders.append(threading.current_thread().name)
        return load_data_text(numbers, columns)

    monkeypatch.setattr(mariadb_staging, "load_data_text", recorded)
    table = f"dogana_ahead_{uuid.uuid4().hex[:10]}"
    rows = 2 * BATCH_ROWS + 7
    path = write_many(tmp_path / "many.parquet", rows)
    connection = test_receiver_mariadb.connector(mariadb_url, local_infile=True)()
    try:
        staged = staging.stage_file(connection, MARIADB, table, path, orders_contract(table))
        assert staged.unreadable is None and staged.rows == rows
        cursor = connection.cursor()
        cursor.execute(
            f"SELECT COUNT(*), SUM(_dogana_row = id + 1), SUM(name = CAST(id AS CHAR)) "
            f"FROM {MARIADB.quote(table)}"
        )
        assert tuple(int(n) for n in cursor.fetchone()) == (rows, rows, rows)
        assert len(builders) == 3
        assert sum(name.startswith("dogana-load-data") for name in builders) == 2
    finally:
        staging.drop(connection, MARIADB, table)
        connection.close()
