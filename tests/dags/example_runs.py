"""What the example-DAG tests share: a source and a receiver on one database, DAG files loaded
from the DAGs folder, and reads of what a run left in the metadata database and the receiver.

Each test gets its own source and receiver: two SQLite files in tmp_path (the embedded default),
two schemas of the PostgreSQL test database (the connection's search_path names them), or two
MariaDB databases, so runs never see each other's tables. The example DAGs read their connection
ids from the environment and default to dogana_source and dogana_default; the tests set those
connections with AIRFLOW_CONN_* variables, as a deployment would.

The PostgreSQL receiver requires activation, as the PostgreSQL examples document: configure
switches it on and activates every table the example DAGs deliver (example_activation.py); a
test delivering tables of its own activates them (activate). SQLite and MariaDB keep the
default, off.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from airflow_runs import asset_events as asset_events
from airflow_runs import states as states
from airflow_runs import xcom as xcom
from example_activation import activation, example_tables, require_and_activate

from dogana_core.claims import Claims
from dogana_core.gate import Receipt
from dogana_core.group import Group

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dags" / "examples"


def now() -> datetime:
    """The machine's clock, which is the SQLite source's clock and the PostgreSQL server's."""
    time.sleep(0.002)  # strictly later than any earlier stamp or read
    return datetime.now(UTC)


def on_one_utc_day(minutes: int = 2) -> None:
    """Wait past UTC midnight when it is near: a test whose runs straddle it would see a rolling
    date window move between them."""
    clock = datetime.now(UTC)
    midnight = datetime.combine(clock.date() + timedelta(days=1), datetime.min.time(), UTC)
    if midnight - clock < timedelta(minutes=minutes):
        time.sleep((midnight - clock).total_seconds() + 1)


class Databases:
    """One source and one receiver of a kind ("sqlite", "postgres" or "mariadb"), reached by SQL."""

    def __init__(self, kind: str, tmp_path: Path, server_url: str | None) -> None:
        self.kind = kind
        self.uid = uuid.uuid4().hex[:8]
        self.tmp_path = tmp_path
        self.postgres_url = server_url if kind == "postgres" else None
        self.mariadb_url = server_url if kind == "mariadb" else None
        self.runs: list[Any] = []
        if kind == "sqlite":
            self.source_path = tmp_path / "source.sqlite"
            self.receiver_path = tmp_path / "warehouse.sqlite"
            with sqlite3.connect(self.source_path) as connection:
                # WAL: the extractor's read transaction does not block the test's writes.
                connection.execute("PRAGMA journal_mode = WAL")
        else:
            self.source_schema = f"src_{self.uid}"
            self.receiver_schema = f"dst_{self.uid}"
            if kind == "postgres":
                assert self.postgres_url is not None
                with psycopg.connect(self.postgres_url, autocommit=True) as connection:
                    connection.execute(f"CREATE SCHEMA {self.source_schema}")
                    connection.execute(f"CREATE SCHEMA {self.receiver_schema}")
            else:  # MariaDB: a schema is a database
                connection = self._mariadb(None)
                try:
                    cursor = connection.cursor()
                    cursor.execute(f"CREATE DATABASE {self.source_schema}")
                    cursor.execute(f"CREATE DATABASE {self.receiver_schema}")
                finally:
                    connection.close()

    # Airflow connections --------------------------------------------------------------------

    def connection(self, role: str) -> str:
        """The AIRFLOW_CONN_* value of the source or the receiver."""
        if self.kind == "sqlite":
            path = self.source_path if role == "source" else self.receiver_path
            return json.dumps({"conn_type": "sqlite", "host": str(path)})
        schema = self.source_schema if role == "source" else self.receiver_schema
        if self.kind == "mariadb":
            assert self.mariadb_url is not None
            return f"{self.mariadb_url.rsplit('/', 1)[0]}/{schema}"
        assert self.postgres_url is not None
        # libpq options: every session of this connection resolves tables in its own schema.
        return f"{self.postgres_url}?options={quote(f'-csearch_path={schema}')}"

    def configure(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AIRFLOW_CONN_DOGANA_SOURCE", self.connection("source"))
        monkeypatch.setenv("AIRFLOW_CONN_DOGANA_DEFAULT", self.connection("receiver"))
        monkeypatch.delenv("DOGANA_SOURCE_CONN_ID", raising=False)
        monkeypatch.delenv("DOGANA_RECEIVER_CONN_ID", raising=False)
        # The test's own delivery folder; published files kept, as the replay tests gate a
        # published delivery again.
        folder = self.tmp_path / "deliveries"
        monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", folder.as_uri())
        monkeypatch.setenv("AIRFLOW__DOGANA__KEEP_PUBLISHED", "True")
        if self.requires_activation:
            require_and_activate(self.hook.receiver, example_tables())

    @property
    def requires_activation(self) -> bool:
        return self.kind == "postgres"

    def activate(self, tables: Sequence[str]) -> None:
        """Activate a test's own tables where the receiver requires it."""
        if self.requires_activation:
            for table in tables:
                self.hook.receiver.sources.activate(table, **activation())

    def run(self, dag: Any, **kwargs: Any) -> Any:
        """dag.test() at the machine's clock unless a logical date is given: the runs of a test
        are seconds apart, so each run's data interval ends after the previous run's read."""
        kwargs.setdefault("logical_date", now())
        found = dag.test(**kwargs)
        self.runs.append(found)
        return found

    def drop(self) -> None:
        if self.kind == "mariadb":
            connection = self._mariadb(None)
            try:
                cursor = connection.cursor()
                cursor.execute(f"DROP DATABASE IF EXISTS {self.source_schema}")
                cursor.execute(f"DROP DATABASE IF EXISTS {self.receiver_schema}")
            finally:
                connection.close()
        if self.kind == "postgres":
            assert self.postgres_url is not None
            with psycopg.connect(self.postgres_url, autocommit=True) as connection:
                connection.execute(f"DROP SCHEMA IF EXISTS {self.source_schema} CASCADE")
                connection.execute(f"DROP SCHEMA IF EXISTS {self.receiver_schema} CASCADE")

    # The source -----------------------------------------------------------------------------

    @contextmanager
    def _source(self) -> Iterator[Any]:
        if self.kind == "sqlite":
            connection = sqlite3.connect(self.source_path)
            try:
                yield connection
                connection.commit()
            finally:
                connection.close()
        elif self.kind == "mariadb":
            connection = self._mariadb(self.source_schema)
            try:
                yield connection
                connection.commit()
            finally:
                connection.close()
        else:
            assert self.postgres_url is not None
            with psycopg.connect(self.postgres_url) as connection:
                connection.execute(f"SET search_path = {self.source_schema}")
                yield connection

    def _mariadb(self, database: str | None) -> Any:
        import MySQLdb

        assert self.mariadb_url is not None
        parts = urlsplit(self.mariadb_url)
        options: dict[str, Any] = {
            "host": parts.hostname or "127.0.0.1",
            "port": parts.port or 3306,
            "user": parts.username or "root",
            "password": parts.password or "",
            "charset": "utf8mb4",
        }
        if database is not None:
            options["database"] = database
        return MySQLdb.connect(**options)

    def source(self, sql: str, *rows: Sequence[Any]) -> None:
        """Run one statement in the source (once, or once per row), in one transaction.

        Placeholders are written ``?`` and become ``%s`` on PostgreSQL; datetimes are bound as
        ISO 8601 text with their offset on SQLite, as an application writing UTC would store them.
        """
        if self.kind != "sqlite":
            sql = sql.replace("?", "%s")
        with self._source() as connection:
            cursor = connection.cursor()
            if not rows:
                cursor.execute(sql)
            for row in rows:
                cursor.execute(sql, [self._bound(value) for value in row])

    def create(self, ddl: str) -> None:
        """A CREATE TABLE written once: TIMESTAMPTZ is DATETIME on SQLite, and DATETIME(6) of
        UTC on MariaDB, whose sessions the extractor sets to UTC."""
        if self.kind == "sqlite":
            ddl = ddl.replace("TIMESTAMPTZ", "DATETIME")
        elif self.kind == "mariadb":
            ddl = ddl.replace("TIMESTAMPTZ", "DATETIME(6)")
        self.source(ddl)

    def _bound(self, value: Any) -> Any:
        if self.kind == "sqlite" and isinstance(value, datetime):
            return value.isoformat()
        if self.kind == "mariadb" and isinstance(value, datetime):
            return value.astimezone(UTC).replace(tzinfo=None)
        return value

    def source_rows(self, sql: str) -> list[tuple[Any, ...]]:
        with self._source() as connection:
            cursor = connection.cursor()
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]

    # The receiver ---------------------------------------------------------------------------

    @property
    def hook(self) -> Any:
        """The receiver's DoganaHook. Airflow is imported here, never when this module loads:
        it reads its configuration once, and the session's AIRFLOW_HOME is set after conftests
        are imported (tests/conftest.py, pytest_configure)."""
        from dogana_provider.hooks.dogana import DoganaHook

        return DoganaHook("dogana_default")

    def claims(
        self,
        tables: str | Sequence[str],
        *,
        limit: timedelta = timedelta.max,
        windows: dict[str, Any] | None = None,
    ) -> Claims:
        """The claims of one table, or of several taken together (Group.claims), now; every
        ledger read in one committed state."""
        names = [tables] if isinstance(tables, str) else list(tables)
        ledgers = self.hook.ledgers(names)
        group = Group(tuple(ledger.contract for ledger in ledgers.values()))
        return group.claims(ledgers, datetime.now(UTC), limit=limit, windows=windows)

    def published(self, table: str, columns: Sequence[str]) -> set[tuple[Any, ...]]:
        """The published rows, projected on columns, read with the ledger in one transaction."""
        with self.hook.receiver.read(table) as snapshot:
            at = [snapshot.columns.index(column) for column in columns]
            return {tuple(row[i] for i in at) for row in snapshot.rows}

    def receipts(self, table: str) -> list[Receipt]:
        return self.hook.receiver.receipts(table)


# DAG files and runs ---------------------------------------------------------------------------


def load_example(airflow_home: Path, name: str) -> Any:
    """Copy dags/examples/<name>.py into the DAGs folder and import it from there.

    dag.test() serializes a DAG by parsing the DAGs folder, so the file must live there; it is
    imported after the test set the environment the DAG file reads.
    """
    target = airflow_home / "dags" / f"{name}.py"
    shutil.copyfile(EXAMPLES / f"{name}.py", target)
    module_name = f"dogana_example_{name}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def write_dag(airflow_home: Path, name: str, text: str) -> Any:
    """A test's own DAG file (never an example), loaded like one."""
    target = airflow_home / "dags" / f"{name}.py"
    target.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REDELIVER = '''
"""A test's DAG: the gate and publish tasks of an example, on a delivery given in the run's conf
(one {"manifest", "uri"}, or a list of them for a group): a replay, or a tampered file."""
import datetime

from airflow.sdk import DAG

from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.publish import PublishOperator

with DAG(
    "dogana_test_redeliver",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    catchup=False,
) as dag:
    GateOperator(task_id="gate", delivery="{{ dag_run.conf['delivery'] }}") >> PublishOperator(
        task_id="publish"
    )
'''


def redeliver(databases: Databases, airflow_home: Path, delivery: Any) -> Any:
    """Run the gate and publish tasks again on a delivery an example's extract task pushed."""
    module = write_dag(airflow_home, "dogana_test_redeliver", REDELIVER)
    return databases.run(module.dag, run_conf={"delivery": delivery})


def create_invoice_tables(databases: Databases) -> None:
    """The invoices example's source tables, empty: invoices and their lines."""
    databases.create(
        "CREATE TABLE invoices (invoice_id BIGINT PRIMARY KEY, customer TEXT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    databases.create(
        "CREATE TABLE invoice_lines (line_id BIGINT PRIMARY KEY, invoice_id BIGINT NOT NULL, "
        "amount_cents BIGINT NOT NULL)"
    )


def cheapen(delivery: Any) -> None:
    """Alter a delivered orders file on its way to the gate: every amount_cents becomes 1, so
    its bytes no longer hash to what its manifest declares."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = local_path(delivery["uri"])
    table = pq.read_table(path)
    column = table.schema.get_field_index("amount_cents")
    cheaper = pa.array([1] * table.num_rows, pa.int64())
    pq.write_table(table.set_column(column, "amount_cents", cheaper), path)


def local_path(uri: str) -> Path:
    assert uri.startswith("file://"), uri
    return Path(uri.removeprefix("file://"))
