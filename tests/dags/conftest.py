"""Fixtures of the example-DAG tests: each runs on SQLite (the embedded default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from example_runs import Databases


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def databases(
    request: pytest.FixtureRequest,
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Databases]:
    """A source and a receiver on SQLite files, or in two fresh PostgreSQL schemas."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    found = Databases(request.param, tmp_path, url)
    found.configure(monkeypatch)
    try:
        yield found
    finally:
        found.drop()
