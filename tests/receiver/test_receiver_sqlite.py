"""The conformance suite on SQLite: a database file per test, no server."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest
from receiver_conformance import Connect, ReceiverConformance

from dogana_provider.sql import SQLITE


class TestSQLite(ReceiverConformance):
    driver_error = sqlite3.Error
    dialect = SQLITE
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "NaN, which SQLite stores as NULL": pa.array([float("nan")])
    }

    @pytest.fixture
    def connect(self, tmp_path: Path) -> Connect:
        path = tmp_path / "receiver.sqlite"
        # timeout: a second writer waits for BEGIN IMMEDIATE's lock instead of failing at once.
        return lambda: sqlite3.connect(path, timeout=30)
