"""The examples' source tables ship as DDL for both databases, and the DDL is what the examples
read: examples/source_tables.sqlite.sql and examples/source_tables.postgresql.sql run on a real
SQLite file and a real PostgreSQL, and every column an example contract declares (key, cursor,
deleted flag, window, typed columns, an ODCS file's properties, a quality expectation's column)
is a column of the table they create."""

from __future__ import annotations

import importlib.util
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SQLITE_DDL = ROOT / "examples" / "source_tables.sqlite.sql"
POSTGRES_DDL = ROOT / "examples" / "source_tables.postgresql.sql"
# Still read by examples/demo.py and tests/deployment: the new file must keep what it creates.
EXAMPLE_FILES = [
    ROOT / "examples" / "quickstart.py",
    ROOT / "examples" / "quickstart_short.py",
    # web_orders.py and api_orders.py read a JSON Lines file and an HTTP API through their
    # connectors: no SQL table holds them.
    *sorted(
        p
        for p in (ROOT / "dags" / "examples").glob("*.py")
        if p.name not in ("web_orders.py", "api_orders.py")
    ),
]
CONTRACTS = ROOT / "dags" / "examples" / "contracts"

pytestmark = pytest.mark.airflow  # importing the example DAGs imports Airflow


def _add(found: dict[str, set[str]], table: str, columns: Any) -> None:
    found.setdefault(table, set()).update(c for c in columns if c)


def _contract_columns(found: dict[str, set[str]], contract: Any) -> None:
    _add(found, contract.table, contract.key)
    _add(found, contract.table, dict(contract.types))
    _add(found, contract.table, (contract.cursor_column, contract.deleted_column))
    _add(found, contract.table, (contract.window_column,))


def _expectation_columns(found: dict[str, set[str]], table: str, expectations: Any) -> None:
    as_dict = expectations if isinstance(expectations, dict) else expectations.to_dict()
    _add(found, table, as_dict.get("column_mapping", {}))


def _module(path: Path) -> Any:
    name = f"example_ddl_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def declared() -> dict[str, set[str]]:
    """Each source table the examples read -> the columns they declare of it."""
    from dogana_core import Contract
    from dogana_provider.contract_files import read_contract_folder

    found: dict[str, set[str]] = {}
    for path in EXAMPLE_FILES:
        module = _module(path)
        contracts = [v for v in vars(module).values() if isinstance(v, Contract)]
        for contract in contracts:
            _contract_columns(found, contract)
        expectations = getattr(module, "EXPECTATIONS", None)
        if expectations is not None:
            assert len(contracts) == 1, f"{path.name}: EXPECTATIONS of which table?"
            _expectation_columns(found, contracts[0].table, expectations)
    files, errors = read_contract_folder(CONTRACTS)
    assert errors == [] and len(files) == 10
    for contract_file in files:
        for contract in contract_file.contracts:
            _contract_columns(found, contract)
        for table, columns in contract_file.columns.items():
            _add(found, table, columns)
        for table, expectations in contract_file.declared().items():
            _expectation_columns(found, table, expectations)
    return found


@pytest.fixture(scope="module")
def declared_columns() -> dict[str, set[str]]:
    return declared()


def _sqlite_tables(path: Path, ddl: Path) -> dict[str, set[str]]:
    connection = sqlite3.connect(path)
    try:
        connection.executescript(ddl.read_text(encoding="utf-8"))
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        return {
            table: {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
            for table in tables
            if not table.startswith("sqlite_")
        }
    finally:
        connection.close()


@pytest.fixture
def postgres_schema(postgres_url: str) -> Iterator[tuple[Any, str]]:
    """A connection whose search_path is a scratch schema, dropped afterwards."""
    import psycopg

    schema = f"example_ddl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
        try:
            connection.execute(f"SET search_path TO {schema}")
            yield connection, schema
        finally:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


def test_every_declared_column_is_in_the_sqlite_ddl(
    tmp_path: Path, declared_columns: dict[str, set[str]]
) -> None:
    created = _sqlite_tables(tmp_path / "source.db", SQLITE_DDL)
    missing = {
        table: sorted(columns - created.get(table, set()))
        for table, columns in declared_columns.items()
        if columns - created.get(table, set())
    }
    assert missing == {}
    # Thirteen tables: the quickstart's, dags/examples/*.py's and the contract files' eleven.
    assert len(declared_columns) == 13 and set(declared_columns) == set(created)


@pytest.mark.postgres
def test_every_declared_column_is_in_the_postgresql_ddl(
    postgres_schema: tuple[Any, str], declared_columns: dict[str, set[str]]
) -> None:
    connection, schema = postgres_schema
    # psql's spelling of the file is plain SQL: one execute runs every statement in it.
    connection.execute(POSTGRES_DDL.read_text(encoding="utf-8"))
    created: dict[str, set[str]] = {}
    for table, column in connection.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s",
        (schema,),
    ):
        created.setdefault(table, set()).add(column)
    missing = {
        table: sorted(columns - created.get(table, set()))
        for table, columns in declared_columns.items()
        if columns - created.get(table, set())
    }
    assert missing == {}
    assert set(declared_columns) == set(created)


@pytest.mark.postgres
def test_both_ddl_files_create_the_same_tables_and_columns(
    tmp_path: Path, postgres_schema: tuple[Any, str]
) -> None:
    connection, schema = postgres_schema
    connection.execute(POSTGRES_DDL.read_text(encoding="utf-8"))
    on_postgres: dict[str, set[str]] = {}
    for table, column in connection.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s",
        (schema,),
    ):
        on_postgres.setdefault(table, set()).add(column)
    assert _sqlite_tables(tmp_path / "source.db", SQLITE_DDL) == on_postgres
