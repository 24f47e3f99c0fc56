"""The conformance suite on MariaDB again, over connections that allow LOAD DATA LOCAL INFILE:
staging then loads each batch as a file (staging.py's _LocalInfile) instead of executemany, and
every rule holds the same, unstorable values and faults mid-publish included."""

from __future__ import annotations

import pyarrow as pa
import pytest
import test_receiver_mariadb
from receiver_conformance import Connect

from dogana_provider.sql import MARIADB
from dogana_provider.staging import _LocalInfile

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
        loader = _LocalInfile(connection, MARIADB, table, "n, s, b")
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
