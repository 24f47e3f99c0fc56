"""The schema tests' database fixture: SQLite, PostgreSQL and MariaDB, one test each."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from schema_databases import Database, mariadb_database, postgres_database, sqlite_database


@pytest.fixture
def uid() -> str:
    return f"s{uuid.uuid4().hex[:10]}"


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def database(request: pytest.FixtureRequest, tmp_path: Path, uid: str) -> Iterator[Database]:
    if request.param == "sqlite":
        yield sqlite_database(tmp_path / "source.db")
        return
    if request.param == "postgresql":
        found = postgres_database(request.getfixturevalue("postgres_url"))
    else:
        found = mariadb_database(request.getfixturevalue("mariadb_url"))
    yield found
    found.drop_tables(uid)
