"""The live receiver the command-line tests read: the tables of tests/several_tables.py on a
SQLite file, and in a PostgreSQL schema of its own, filled once per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from several_tables import PASSWORD, Live, filled_receiver


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], scope="module"
)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """A filled receiver; its PostgreSQL URL carries PASSWORD, which no output may show."""
    directory = tmp_path_factory.mktemp(f"{request.module.__name__}-{request.param}")
    server = None if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    with filled_receiver(request.param, directory, server, PASSWORD) as found:
        yield found
