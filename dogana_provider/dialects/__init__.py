"""SQL dialects: what differs between databases, one Dialect object per database.

The receiver (staging, row checks, publication, the store) and the snapshot sources are written
once, against a Dialect; dialect_for finds a database's, by its name or a common-sql hook's.
base.py holds the Dialect class and the helpers written once against it; sqlite.py, postgres.py
and mariadb.py what each database does differently.
"""

from __future__ import annotations

from typing import Any

from dogana_provider.dialects.base import (
    DECIMAL_PREFIX,
    CatalogColumn,
    Dialect,
    StatementFailed,
    create_index,
    declared_types,
    declared_types_of,
    display,
    execute,
    fetch_all,
    fetch_one,
    run_or_fail,
    scalar,
    statement_error,
)
from dogana_provider.dialects.mariadb import MARIADB
from dogana_provider.dialects.postgres import POSTGRES
from dogana_provider.dialects.sqlite import SQLITE, declared_type, sqlite_date, sqlite_datetime

DIALECTS: dict[str, Dialect] = {
    "sqlite": SQLITE,
    "postgresql": POSTGRES,
    "postgres": POSTGRES,
    "mysql": MARIADB,
    "mariadb": MARIADB,
}
"""Every database dogana runs on, by the names hooks and connections give it."""


class UnknownDatabase(ValueError):
    """No dialect for a database dogana does not run on."""


def dialect_for(name_or_hook: str | Any) -> Dialect:
    """The Dialect of a database: by name (sqlite, postgresql, postgres, mysql, mariadb, a
    SQLAlchemy driver suffix allowed: postgresql+psycopg), or a common-sql DbApiHook's
    (its dialect_name, else its conn_type)."""
    if isinstance(name_or_hook, str):
        name = name_or_hook
    else:
        name = getattr(name_or_hook, "dialect_name", "") or getattr(name_or_hook, "conn_type", "")
    name = str(name).lower()
    dialect = DIALECTS.get(name.partition("+")[0])
    if dialect is None:
        raise UnknownDatabase(
            f"no dogana dialect for database {name!r}: SQLite, PostgreSQL and MySQL/MariaDB "
            "(through SqliteHook, PostgresHook, MySqlHook)"
        )
    return dialect


__all__ = [
    "DECIMAL_PREFIX",
    "DIALECTS",
    "MARIADB",
    "POSTGRES",
    "SQLITE",
    "CatalogColumn",
    "Dialect",
    "StatementFailed",
    "UnknownDatabase",
    "create_index",
    "declared_type",
    "declared_types",
    "declared_types_of",
    "dialect_for",
    "display",
    "execute",
    "fetch_all",
    "fetch_one",
    "run_or_fail",
    "scalar",
    "sqlite_date",
    "sqlite_datetime",
    "statement_error",
]
