"""Fixtures of the example-DAG tests: each runs on SQLite (the embedded default), PostgreSQL and
MariaDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from example_runs import Databases


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def databases(
    request: pytest.FixtureRequest,
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Databases]:
    """A source and a receiver on SQLite files, or in two fresh PostgreSQL schemas or MariaDB
    databases."""
    url = None
    if request.param != "sqlite":
        url = request.getfixturevalue(f"{request.param}_url")
    found = Databases(request.param, tmp_path, url)
    found.configure(monkeypatch)
    try:
        yield found
    finally:
        found.drop()
