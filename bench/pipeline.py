"""One table moved between two databases of one kind: dogana's four operators against the
database's own bulk copy (the floor), common-sql's GenericTransfer and dlt, in one run.

For each database (PostgreSQL, SQLite, MariaDB), a generated source table of N rows and six
columns (bigint key, text with nulls, empty strings, quotes and non-ASCII letters, numeric(12,2),
date, timestamptz with microseconds, boolean) is moved into an empty target database by:

    floor             the database's own bulk path, no Python in it: PostgreSQL psql's
                      \\copy (SELECT ...) TO STDOUT piped into \\copy ... FROM STDIN; SQLite ATTACH
                      and INSERT ... SELECT; MariaDB SELECT ... INTO OUTFILE then LOAD DATA INFILE
    dogana            PlanDeliveryOperator, ExtractOperator, GateOperator and PublishOperator's
                      execute(), in order, in one process: a complete delivery read in one
                      snapshot, written to Parquet, counted and hashed, staged and checked,
                      published with its ledger and receipt
    GenericTransfer   its execute(): SELECT ... ORDER BY id by pages of 50,000 rows, each page
                      written with insert_rows (executemany, one commit per page)
    dlt               (PostgreSQL) sql_table with the pyarrow backend, write_disposition replace,
                      in a virtual environment the bench makes for it (~/.cache/dogana-bench/dlt);
                      skipped, saying why, when it cannot be made
    dogana N=2        (PostgreSQL) the same, the extract's readers=2: the table read by two
                      readers in its one exported snapshot, each writing a Parquet part
                      (sources/parallel.py), staged by two loaders at once (staging/parts.py);
                      the speed-up over one reader, and what limits it (each step's CPU)
    Sling             (PostgreSQL) sling run --mode full-refresh, the Go data mover, when a
                      binary runs here (SLING_BINARY or sling on PATH); skipped, saying why
    dogana dag.test   (PostgreSQL) the same four operators as a DAG run with dag.test(), beside
                      a one-task DAG's run: what Airflow itself adds per task

Each variant runs in its own process into a target emptied before it, so its peak memory is its
own; "rows add" is a step's peak RSS (the kernel's VmHWM, reset before each step) above the
process's RSS once Airflow, pyarrow, the drivers and dogana are imported, before any row moves,
printed per step; the delivery's is the largest, and should stay flat from 1M to 10M rows.
Every target is then compared with the source by count and an aggregate of every column.

After the full delivery, the database first finishes what the load left it to do in the
background (a checkpoint on PostgreSQL, InnoDB's dirty pages written out and its purge done on
MariaDB), as it has by the time a changes delivery comes a day later. Then dogana's process
changes 10,000 rows spread across the source (every N/10,000th id) and delivers them as a
changes delivery, read by the cursor column, which the source indexes as a source read by
changes would: five rounds (--change-rounds), each of other spread rows, the median printed.
The floor's variant applies the same changes in the same way with the database's own tools (the
changed rows copied into a temporary table, then the published rows replaced in one
transaction): what those rows cost the database itself.

Then a delivery's fixed cost: changes deliveries of FEW (10) spread rows, the median of five
(--change-rounds), and one more counted: the statements the drivers were asked to run (sqlite3's
trace callback, psycopg's and MySQLdb's cursors wrapped in the bench's process alone) and the
connections opened.

With --rounds N, the full deliveries of the floor, dogana and GenericTransfer are taken in turn N
times and the median printed beside every round (the changes deliveries in the first round).

The targets (issue 9): PostgreSQL within 2x of the floor; MariaDB within 3x of the floor and
ahead of GenericTransfer; rows add under 100 MB, flat from 1M to 10M rows; the changes delivery
under 5% of the full one, flat in N (within FLAT_CHANGES). Issue 26: SQLite at least 2.5x ahead
of GenericTransfer and within 4x of its floor (in the median of --rounds 5). Not a timed test: it
prints ratios measured in this one run, it never fails on time.

    PYTHONPATH=. .venv/bin/python bench/pipeline.py                   # 1,000,000 rows
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --rows 100000 --databases postgresql
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --large    # and 10M (PostgreSQL, SQLite), 50M
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --large --no-huge --databases postgresql
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --profile         # cProfile of dogana's runs
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --quick --databases sqlite --rounds 5
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --rows 2000 --quick --change-rounds 1  # smoke
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PG_SERVER = os.environ.get("DOGANA_BENCH_SERVER", "postgresql://postgres@127.0.0.1:5432")
MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
TABLE = "bench_orders"
GENERIC_TABLE = "bench_orders_generic"
PAGE_SIZE = 50_000
CHANGED = 10_000
# Changes deliveries measured, each of other spread rows (a delivery moves the rows it replaces
# together at the table's end on PostgreSQL and MariaDB); the median is printed. --change-rounds
# takes fewer, where only whether each kind of delivery still runs is asked (tests/bench).
CHANGE_ROUNDS = 5
FEW = 10  # the rows of the small changes delivery, which measures a delivery's fixed cost
FLAT_MIB = 10  # what rows add may grow by from the smallest run to the largest and be "flat"
SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')"
FLAT_CHANGES = 1.25  # what the changes delivery's time may grow by, 1M to 10M rows, and be "flat"
DLT_VENV = Path.home() / ".cache" / "dogana-bench" / "dlt"
DLT_PACKAGES = ["dlt[postgres,sql_database]>=1.0", "pyarrow", "sqlalchemy>=2", "psycopg[binary]"]

PARALLEL = "dogana N=2"  # the extract's readers=2 (sources/parallel.py)
# Sling's binary: SLING_BINARY, else a sling on PATH. PyPI's sling 1.6.x fetches its binary
# from GitHub at first use; where that is out of reach, sling-linux-amd64 (1.4.11) ships one.
SLING_BINARY = os.environ.get("SLING_BINARY") or shutil.which("sling")

COLUMNS = ("id", "customer", "amount", "order_day", "updated_at", "paid")
# The generated cursor column: 17 s a row from 2000 on, so that 10M rows (5.4 years) lie in the
# past, and a changes read meets the changed rows alone.
DDL = {
    "postgresql": "id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), order_day DATE, "
    "updated_at TIMESTAMPTZ NOT NULL, paid BOOLEAN",
    "sqlite": "id INTEGER PRIMARY KEY, customer TEXT, amount DECIMAL(12,2), order_day DATE, "
    "updated_at TIMESTAMP NOT NULL, paid BOOLEAN",
    "mysql": "id BIGINT PRIMARY KEY, customer TEXT CHARACTER SET utf8mb4, amount DECIMAL(12,2), "
    "order_day DATE, updated_at DATETIME(6) NOT NULL, paid BOOLEAN",
}
# Every column in one aggregate, the same text on the three databases: count and sums (SQLite
# sums its REAL amounts in row order, which a changes delivery moves: rounded to the cents).
AGGREGATE = (
    "SELECT COUNT(*), SUM(id), SUM(LENGTH(customer)), COUNT(customer), ROUND(SUM(amount), 2), "
    "COUNT(order_day), SUM(CASE WHEN paid THEN 1 ELSE 0 END) FROM {table}"
)


# The databases ------------------------------------------------------------------------------------


class Database:
    """One kind of database: its source and target, and how each variant reaches them."""

    name: str
    soft_delete: str | None = None
    """A boolean column the source flags deleted rows with, which floor_changes copies, then
    deletes those rows and inserts the others (bench/changes.py); None: every row is live."""

    def __init__(self, run: str, home: Path) -> None:
        self.run, self.home = run, home

    def source_url(self) -> str: ...
    def target_url(self) -> str: ...
    def generate(self, rows: int) -> None: ...
    def reset_target(self) -> None: ...
    def floor(self) -> None: ...
    def drop(self) -> None: ...
    def change(self, rows: int, turn: int = 0, changed: int = CHANGED) -> None: ...
    def settle(self) -> None: ...
    def mark(self) -> str: ...
    def floor_changes(self, mark: str) -> None: ...
    def pages(self, rows: int) -> str | None:
        return None

    def page_reads(self) -> int | None:
        """The pages the server has read from disk so far, server-wide, where it counts them
        (InnoDB's Innodb_buffer_pool_reads); None elsewhere."""
        return None

    def query(self, url: str, sql: str) -> list[tuple[Any, ...]]: ...

    def aggregate(self, url: str, table: str) -> tuple[Any, ...] | None:
        try:
            [row] = self.query(url, AGGREGATE.format(table=table))
        except Exception:  # the table is missing: the variant failed
            return None
        return tuple(str(value) for value in row)


class Postgres(Database):
    name = "postgresql"

    def _db(self, role: str) -> str:
        return f"dogana_bench_{role}_{self.run}"

    def source_url(self) -> str:
        return f"{PG_SERVER}/{self._db('source')}"

    def target_url(self) -> str:
        return f"{PG_SERVER}/{self._db('target')}"

    def _admin(self, sql: str) -> None:
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
            admin.execute(sql)

    def query(self, url: str, sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(url) as connection:
            return connection.execute(sql).fetchall()

    def generate(self, rows: int) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {self._db('source')} WITH (FORCE)")
        self._admin(f"CREATE DATABASE {self._db('source')}")
        with psycopg.connect(self.source_url(), autocommit=True) as source:
            source.execute(f"CREATE TABLE {TABLE} ({DDL[self.name]})")
            source.execute(
                f"INSERT INTO {TABLE} SELECT i, CASE WHEN i % 10 = 0 THEN NULL "
                "WHEN i % 10 = 1 THEN '' ELSE 'Zoë \"' || (i % 50000) || ', Müller' END, "
                "(i * 7919 % 10000000) / 100.0, DATE '2025-01-01' + (i % 730)::int, "
                "TIMESTAMPTZ '2000-01-01 00:00:00+00' + i * INTERVAL '17.000123 seconds', "
                f"i % 3 = 0 FROM generate_series(1::bigint, {rows}) i"
            )
            source.execute(f"CREATE INDEX ON {TABLE} (updated_at)")
            source.execute(f"VACUUM ANALYZE {TABLE}")

    def reset_target(self) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {self._db('target')} WITH (FORCE)")
        self._admin(f"CREATE DATABASE {self._db('target')}")
        self._admin("CHECKPOINT")  # no variant pays for the writes of the one before it

    def floor(self) -> None:
        with psycopg.connect(self.target_url(), autocommit=True) as target:
            target.execute(f"CREATE TABLE {TABLE} ({DDL[self.name]})")
        names = ", ".join(COLUMNS)
        out = f"\\copy (SELECT {names} FROM {TABLE}) TO STDOUT"
        into = f"\\copy {TABLE} ({names}) FROM STDIN"
        source, target = self.source_url(), self.target_url()
        subprocess.run(
            f"psql -q -d {source} -c '{out}' | psql -q -d {target} -c '{into}'",
            shell=True,
            check=True,
        )

    def change(self, rows: int, turn: int = 0, changed: int = CHANGED) -> None:
        step = max(1, rows // changed)
        with psycopg.connect(self.source_url(), autocommit=True) as source:
            source.execute(
                f"UPDATE {TABLE} SET amount = amount + 1, updated_at = clock_timestamp() "
                f"WHERE id % {step} = {turn % step} AND id <= {step * changed}"
            )

    def settle(self) -> None:
        # What a server does within minutes of a load, done now: a changes delivery a day later
        # finds the load's pages written out, and logs a full image of each page it changes
        # first (full_page_writes), as it would then.
        self._admin("CHECKPOINT")

    def mark(self) -> str:
        [(mark,)] = self.query(self.source_url(), "SELECT clock_timestamp()::text")
        return str(mark)

    def floor_changes(self, mark: str) -> None:
        names = ", ".join(COLUMNS)
        flag = self.soft_delete
        copied = names if flag is None else f"{names}, {flag}"
        since = psycopg.sql.quote(mark)
        changed = f"updated_at > {since} AND updated_at <= now()"
        out = f"\\copy (SELECT {copied} FROM {TABLE} WHERE {changed}) TO STDOUT"
        script = self.home / "floor_changes.sql"
        script.write_text(
            f"CREATE TEMPORARY TABLE changed (LIKE {TABLE}"
            f"{'' if flag is None else f', {flag} BOOLEAN'}) ON COMMIT DROP;\n"
            f"\\copy changed ({copied}) FROM pstdin\n"
            f"DELETE FROM {TABLE} WHERE id = ANY (ARRAY(SELECT id FROM changed));\n"
            f"INSERT INTO {TABLE} ({names}) SELECT {names} FROM changed"
            f"{'' if flag is None else f' WHERE NOT {flag}'};\n",
            encoding="utf-8",
        )
        reading = subprocess.Popen(
            ["psql", "-q", "-d", self.source_url(), "-c", out], stdout=subprocess.PIPE
        )
        subprocess.run(
            ["psql", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", self.target_url(), "-f", script],
            stdin=reading.stdout,
            check=True,
        )
        assert reading.stdout is not None
        reading.stdout.close()
        if reading.wait() != 0:
            raise RuntimeError("psql \\copy out of the source failed")

    def pages(self, rows: int) -> str | None:
        step = max(1, rows // CHANGED)
        [(touched, total)] = self.query(
            self.target_url(),
            f"SELECT count(DISTINCT (ctid::text::point)[0]), "
            f"pg_relation_size('{TABLE}') / current_setting('block_size')::int "
            f"FROM {TABLE} WHERE id % {step} = 0 AND id <= {step * CHANGED}",
        )
        return f"{touched:,} of the table's {total:,} pages"

    def drop(self) -> None:
        for role in ("source", "target"):
            self._admin(f"DROP DATABASE IF EXISTS {self._db(role)} WITH (FORCE)")


class Sqlite(Database):
    name = "sqlite"

    def _file(self, role: str) -> Path:
        return self.home / f"{role}.sqlite"

    def source_url(self) -> str:
        return f"sqlite://{self._file('source')}"

    def target_url(self) -> str:
        return f"sqlite://{self._file('target')}"

    def query(self, url: str, sql: str) -> list[tuple[Any, ...]]:
        connection = sqlite3.connect(url.removeprefix("sqlite://"))
        try:
            return connection.execute(sql).fetchall()
        finally:
            connection.close()

    def generate(self, rows: int) -> None:
        self._file("source").unlink(missing_ok=True)
        connection = sqlite3.connect(self._file("source"))
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"CREATE TABLE {TABLE} ({DDL[self.name]})")
        connection.execute(
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) "
            f"INSERT INTO {TABLE} SELECT i, CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 "
            "THEN '' ELSE 'Zoë \"' || (i % 50000) || ', Müller' END, "
            "(i * 7919 % 10000000) / 100.0, date('2025-01-01', '+' || (i % 730) || ' days'), "
            "strftime('%Y-%m-%d %H:%M:%S', 946684800 + i * 17, 'unixepoch') "
            "|| printf('.%06d+00:00', i * 123 % 1000000), i % 3 = 0 FROM n"
        )
        connection.execute(f"CREATE INDEX {TABLE}_updated_at ON {TABLE} (updated_at)")
        connection.commit()
        connection.close()

    def reset_target(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self._file('target')}{suffix}").unlink(missing_ok=True)

    def floor(self) -> None:
        connection = sqlite3.connect(self._file("target"))
        connection.execute("ATTACH DATABASE ? AS source", (str(self._file("source")),))
        connection.execute(f"CREATE TABLE {TABLE} ({DDL[self.name]})")
        names = ", ".join(COLUMNS)
        connection.execute(f"INSERT INTO {TABLE} ({names}) SELECT {names} FROM source.{TABLE}")
        connection.commit()
        connection.close()

    def change(self, rows: int, turn: int = 0, changed: int = CHANGED) -> None:
        step = max(1, rows // changed)
        connection = sqlite3.connect(self._file("source"))
        connection.execute(
            f"UPDATE {TABLE} SET amount = amount + 1, "
            f"updated_at = {SQLITE_NOW} "
            f"WHERE id % {step} = {turn % step} AND id <= {step * changed}"
        )
        connection.commit()
        connection.close()

    def settle(self) -> None:
        return None  # a commit wrote everything to the file: the kernel's writes are left

    def mark(self) -> str:
        [(mark,)] = self.query(self.source_url(), f"SELECT {SQLITE_NOW}")
        return str(mark)

    def floor_changes(self, mark: str) -> None:
        # As dogana publishes on SQLite: the rows whose key is there updated in place, the others
        # inserted, in one transaction.
        connection = sqlite3.connect(self._file("target"))
        connection.execute("ATTACH DATABASE ? AS source", (str(self._file("source")),))
        names = ", ".join(COLUMNS)
        sets = ", ".join(f"{name} = c.{name}" for name in COLUMNS if name != "id")
        changed = f"SELECT {names} FROM source.{TABLE} WHERE updated_at > ? "
        changed += f"AND updated_at <= {SQLITE_NOW}"
        connection.execute(
            f"UPDATE {TABLE} SET {sets} FROM ({changed}) c WHERE {TABLE}.id = c.id", (mark,)
        )
        connection.execute(
            f"INSERT INTO {TABLE} ({names}) SELECT {names} FROM ({changed}) c "
            f"WHERE NOT EXISTS (SELECT 1 FROM {TABLE} t WHERE t.id = c.id)",
            (mark,),
        )
        connection.commit()
        connection.close()

    def drop(self) -> None:
        return None  # the files go with the bench's folder


# InnoDB pages still dirty when a load counts as written out.
SETTLED_PAGES = 64


class MariaDb(Database):
    name = "mysql"

    def _db(self, role: str) -> str:
        return f"dogana_bench_{role}_{self.run}"

    def _url(self, database: str) -> str:
        return f"mysql://{MARIADB['user']}@{MARIADB['host']}:{MARIADB['port']}/{database}"

    def source_url(self) -> str:
        return self._url(self._db("source"))

    def target_url(self) -> str:
        # The receiver stages with LOAD DATA LOCAL INFILE where its connection allows it.
        return self._url(self._db("target")) + "?local_infile=true"

    def _connect(self, database: str | None = None, **options: Any) -> Any:
        import MySQLdb

        named = {"database": database} if database else {}
        return MySQLdb.connect(charset="utf8mb4", autocommit=True, **MARIADB, **named, **options)

    def query(self, url: str, sql: str) -> list[tuple[Any, ...]]:
        connection = self._connect(url.rsplit("/", 1)[1].partition("?")[0])
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            return list(cursor.fetchall())
        finally:
            connection.close()

    def _run(self, database: str | None, *statements: str) -> None:
        connection = self._connect(database)
        try:
            cursor = connection.cursor()
            for statement in statements:
                cursor.execute(statement)
        finally:
            connection.close()

    def generate(self, rows: int) -> None:
        source = self._db("source")
        self._run(None, f"DROP DATABASE IF EXISTS {source}", f"CREATE DATABASE {source}")
        self._run(
            source,
            f"CREATE TABLE {TABLE} ({DDL[self.name]})",
            f"INSERT INTO {TABLE} SELECT seq, CASE WHEN seq % 10 = 0 THEN NULL "
            "WHEN seq % 10 = 1 THEN '' ELSE CONCAT('Zoë \"', seq % 50000, ', Müller') END, "
            "(seq * 7919 % 10000000) / 100.0, DATE '2025-01-01' + INTERVAL (seq % 730) DAY, "
            "TIMESTAMP '2000-01-01 00:00:00' + INTERVAL (seq * 17000123) MICROSECOND, "
            f"seq % 3 = 0 FROM seq_1_to_{rows}",
            f"CREATE INDEX {TABLE}_updated_at ON {TABLE} (updated_at)",
        )

    def reset_target(self) -> None:
        target = self._db("target")
        self._run(None, f"DROP DATABASE IF EXISTS {target}", f"CREATE DATABASE {target}")

    def floor(self) -> None:
        dump = Path(tempfile.gettempdir()) / f"dogana_bench_{self.run}.tsv"
        dump.unlink(missing_ok=True)
        names = ", ".join(COLUMNS)
        self._run(self._db("source"), f"SELECT {names} FROM {TABLE} INTO OUTFILE '{dump}'")
        self._run(
            self._db("target"),
            f"CREATE TABLE {TABLE} ({DDL[self.name]})",
            f"LOAD DATA INFILE '{dump}' INTO TABLE {TABLE} ({names})",
        )
        dump.unlink(missing_ok=True)

    def change(self, rows: int, turn: int = 0, changed: int = CHANGED) -> None:
        step = max(1, rows // changed)
        self._run(
            self._db("source"),
            f"UPDATE {TABLE} SET amount = amount + 1, updated_at = UTC_TIMESTAMP(6) "
            f"WHERE id % {step} = {turn % step} AND id <= {step * changed}",
        )

    def settle(self) -> None:
        """Let InnoDB write out the pages the load left dirty, as its page cleaner would within
        minutes of it: a changes delivery a day later does not evict them one by one. And let
        its purge remove what the last statements deleted or changed (their delete-marked
        index entries, read again from disk to be removed): a day later it is done, where
        right after them it reads pages beside whatever runs next, charging the one that ran
        before to the one measured after."""
        connection = self._connect()
        try:
            cursor = connection.cursor()
            cursor.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
            (was,) = cursor.fetchone()
            cursor.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            try:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    cursor.execute(
                        "SHOW GLOBAL STATUS WHERE Variable_name IN "
                        "('Innodb_buffer_pool_pages_dirty', 'Innodb_history_list_length')"
                    )
                    status = {name.lower(): int(value) for name, value in cursor.fetchall()}
                    # Purge and statistics keep a few pages dirty on a quiet server.
                    if (
                        status["innodb_buffer_pool_pages_dirty"] <= SETTLED_PAGES
                        and status["innodb_history_list_length"] == 0
                    ):
                        break
                    time.sleep(0.2)
            finally:
                cursor.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(was)}")
        finally:
            connection.close()

    def mark(self) -> str:
        [(mark,)] = self.query(self.source_url(), "SELECT CAST(UTC_TIMESTAMP(6) AS CHAR)")
        return str(mark)

    def page_reads(self) -> int | None:
        [(_, reads)] = self.query(
            self.source_url(), "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'"
        )
        return int(reads)

    def floor_changes(self, mark: str) -> None:
        dump = Path(tempfile.gettempdir()) / f"dogana_bench_{self.run}_changes.tsv"
        dump.unlink(missing_ok=True)
        names = ", ".join(COLUMNS)
        flag = self.soft_delete
        copied = names if flag is None else f"{names}, {flag}"
        source = self._connect(self._db("source"))
        try:
            source.cursor().execute(
                f"SELECT {copied} FROM {TABLE} WHERE updated_at > %s "
                f"AND updated_at <= UTC_TIMESTAMP(6) INTO OUTFILE '{dump}'",
                (mark,),
            )
        finally:
            source.close()
        updates = ", ".join(f"{name} = VALUES({name})" for name in COLUMNS if name != "id")
        deleted = f"DELETE {TABLE} FROM {TABLE} JOIN changed ON changed.id = {TABLE}.id"
        deletes = [] if flag is None else [f"{deleted} WHERE changed.{flag}"]
        # The target has no flag column: the temporary table takes the source's columns.
        self._run(
            self._db("target"),
            f"CREATE TEMPORARY TABLE changed SELECT {copied} FROM "
            f"{self._db('source')}.{TABLE} LIMIT 0",
            f"LOAD DATA INFILE '{dump}' INTO TABLE changed ({copied})",
            "BEGIN",
            # MariaDB's own upsert: one statement finds each row through the primary key (the
            # clustered index) and changes it there. A multi-table DELETE or UPDATE joined to
            # the changed rows and then an INSERT visit each row's page two or three times, and
            # read it from disk again each time where the table outgrows the buffer pool.
            f"INSERT INTO {TABLE} ({names}) SELECT {names} FROM changed"
            f"{'' if flag is None else f' WHERE NOT {flag}'} ON DUPLICATE KEY UPDATE {updates}",
            *deletes,
            "COMMIT",
        )
        dump.unlink(missing_ok=True)

    def drop(self) -> None:
        self._run(None, *(f"DROP DATABASE IF EXISTS {self._db(r)}" for r in ("source", "target")))


DATABASES = {"postgresql": Postgres, "sqlite": Sqlite, "mysql": MariaDb}


# The variants, each in a child process ------------------------------------------------------------


def contract_file(home: Path) -> Path:
    from dogana_core.contract import Contract
    from dogana_core.shape import Shape

    contract = Contract(
        TABLE,
        ("id",),
        {"full": Shape.complete(cost=100), "changes": Shape.changes(checkpoint="timestamp")},
        cursor_column="updated_at",
        types={"id": "int", "updated_at": "datetime"},
    )
    path = home / f"{TABLE}.contract.json"
    path.write_text(contract.to_json(), encoding="utf-8")
    return path


def rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def reset_peak() -> None:
    """Start the kernel's count of this process's peak RSS (VmHWM) afresh: Linux's clear_refs.

    Where that is refused, peak_mib falls back to the process's lifetime peak (ru_maxrss), which
    can only over-state a step's peak."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        pass


def peak_mib() -> float:
    """The peak RSS since reset_peak, as the kernel counted it (every page, every allocator)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Pushed:
    """Where execute() outside a task instance keeps what a task pushes beside its return value
    (the plan's requirement), as a task instance keeps it in XCom."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.values[key] = value


class ServerCpu:
    """The CPU seconds the PostgreSQL server's processes of this run have spent, from /proc.

    A backend's process title names its database, which names the run (its parallel workers
    name their leader's pid), so a thread sampling /proc every SAMPLE seconds keeps each one's
    last CPU time; a backend that ends between two samples loses at most SAMPLE of it. What a
    step spends waiting is its seconds less its own process's CPU and the server's, when the
    two do not overlap, and at least that much when they do."""

    SAMPLE = 0.1

    def __init__(self, run: str) -> None:
        self.run = run
        self.spent: dict[int, float] = {}
        self.others: set[int] = set()  # processes not the run's: never read again
        self.tick = os.sysconf("SC_CLK_TCK")
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stopped.wait(self.SAMPLE):
            self.sample()

    def sample(self) -> None:
        leaders = set(self.spent)
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in self.others:
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    title = cmdline.read().decode(errors="replace")
                worker = title.rsplit("parallel worker for PID ", 1)
                ours = self.run in title or (len(worker) == 2 and int(worker[1]) in leaders)
                if title and not title.startswith(("postgres", "/usr/lib/postgresql")):
                    self.others.add(int(entry.name))  # a backend still starting has no title
                if not title.startswith("postgres:") or not ours:
                    continue
                with open(f"/proc/{entry.name}/stat", encoding="ascii") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (OSError, ValueError):
                continue
            self.spent[int(entry.name)] = (int(fields[11]) + int(fields[12])) / self.tick

    def seconds(self) -> float:
        self.sample()
        return sum(self.spent.values())

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def dogana_steps(
    home: Path,
    shape: str,
    peaks: dict[str, float] | None = None,
    readers: int = 1,
    cpu: dict[str, dict[str, float]] | None = None,
    bench_run: str = "",
    reads: dict[str, int] | None = None,
    database: Database | None = None,
) -> dict[str, float]:
    """The four operators' execute(), in order, as the DAG wires them; seconds per step, and
    into peaks, when given, each step's peak RSS in MiB. readers: the extract's readers. cpu,
    when given, gets each step's CPU seconds: this process's (every thread) and the server
    processes' of the bench's run (bench_run) (PostgreSQL: ServerCpu; none elsewhere). reads,
    when given, gets each step's pages read from disk where database counts them
    (Database.page_reads), asked between the steps, outside their seconds."""
    from dogana_provider.operators.extract import ExtractOperator
    from dogana_provider.operators.gate import GateOperator
    from dogana_provider.operators.plan import PlanDeliveryOperator
    from dogana_provider.operators.publish import PublishOperator

    contract = str(home / f"{TABLE}.contract.json")
    # A folder of its own, as a DAG's output_folder templated by the run gives each delivery:
    # overwriting the last file would first free its blocks (0.06 s for 10M rows' file).
    folder = Path(tempfile.mkdtemp(prefix=f"{shape}-", dir=home))
    seconds: dict[str, float] = {}
    peaks = {} if peaks is None else peaks
    # What a task's context holds that the operators read: its DAG and run (a publication's
    # lineage edge names them), and a scheduled run's data interval.
    run = {"dag": SimpleNamespace(dag_id="bench_pipeline"), "run_id": f"bench__{folder.name}"}
    server = ServerCpu(bench_run) if cpu is not None else None
    mark = (time.process_time(), server.seconds() if server else 0.0)

    counted = database.page_reads() if reads is not None and database is not None else None

    def spent(step: str) -> None:
        nonlocal mark, counted
        if server is not None and cpu is not None:  # both or neither
            now = (time.process_time(), server.seconds())
            cpu[step] = {"client": now[0] - mark[0], "server": now[1] - mark[1]}
            mark = now
        if counted is not None and reads is not None and database is not None:
            before, counted = counted, database.page_reads()
            if counted is not None:
                reads[step] = counted - before

    reset_peak()
    started = time.perf_counter()
    request = PlanDeliveryOperator(
        task_id="plan", contract=contract, receiver_conn_id="bench_target", shape=shape
    ).execute({**run, "data_interval_end": datetime.now(UTC), "ti": Pushed()})
    seconds["plan"] = time.perf_counter() - started
    peaks["plan"] = peak_mib()
    spent("plan")
    reset_peak()
    started = time.perf_counter()
    delivery = ExtractOperator(
        task_id="extract",
        source_conn_id="bench_source",
        contract=contract,
        request=request,
        output_folder=folder.as_uri(),
        readers=readers,
    ).execute(run)
    seconds["extract"] = time.perf_counter() - started
    peaks["extract"] = peak_mib()
    spent("extract")
    reset_peak()
    started = time.perf_counter()
    decision = GateOperator(
        task_id="gate", receiver_conn_id="bench_target", delivery=delivery
    ).execute(run)
    seconds["gate"] = time.perf_counter() - started
    peaks["gate"] = peak_mib()
    spent("gate")
    reset_peak()
    started = time.perf_counter()
    PublishOperator(task_id="publish", receiver_conn_id="bench_target", decision=decision).execute(
        run
    )
    seconds["publish"] = time.perf_counter() - started
    peaks["publish"] = peak_mib()
    spent("publish")
    if server is not None:
        server.stop()
    return seconds


def few_rows(database: Database, home: Path, rows: int, rounds: int) -> dict[str, Any]:
    """A delivery's fixed cost: changes deliveries of FEW spread rows (the median of
    rounds), then one more counted statement by statement (counted: not timed)."""
    took = []
    for turn in range(rounds):
        database.change(rows, turn, FEW)
        gc.collect()
        started = time.perf_counter()
        dogana_steps(home, "changes")
        took.append(time.perf_counter() - started)
    database.change(rows, rounds, FEW)
    with counted() as count:
        dogana_steps(home, "changes")
    return {
        "few_seconds": statistics.median_low(took),
        "few_rounds": took,
        "few_statements": count["statements"],
        "few_connections": count["connections"],
    }


@contextmanager
def counted(log: list[str] | None = None) -> Iterator[dict[str, int]]:
    """Every statement and connection the drivers see meanwhile, counted: the drivers' own
    entry points wrapped (sqlite3's trace callback, psycopg's and MySQLdb's cursors), the
    bench's alone. With a log, each statement is appended to it beside its callers in dogana's
    own code, innermost first, to find where the statements go."""
    import MySQLdb
    import MySQLdb.cursors

    count = {"statements": 0, "connections": 0}

    def statement(_: Any, args: tuple[Any, ...] = ()) -> None:
        count["statements"] += 1
        if log is not None:
            log.append(described(args[-1] if args else _))

    def wrapped(owner: Any, name: str, before: Any) -> tuple[Any, str, Any]:
        original = getattr(owner, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            made = original(*args, **kwargs)
            before(made, args)
            return made

        setattr(owner, name, counting)
        return owner, name, original

    def connection(made: Any, _: tuple[Any, ...] = ()) -> None:
        count["connections"] += 1
        if isinstance(made, sqlite3.Connection):
            made.set_trace_callback(statement)

    def psycopg_statement(made: Any, args: tuple[Any, ...]) -> None:
        cursor, query = args[:2]
        if log is not None and hasattr(query, "as_string"):  # psycopg.sql's composed query
            query = query.as_string(cursor)
        statement(made, (query,))

    patched = [
        wrapped(sqlite3, "connect", connection),
        wrapped(MySQLdb, "connect", connection),
        wrapped(MySQLdb.cursors.BaseCursor, "_query", statement),
        wrapped(psycopg.Cursor, "execute", psycopg_statement),
        wrapped(psycopg.Cursor, "executemany", psycopg_statement),
        wrapped(psycopg.Cursor, "copy", psycopg_statement),
        wrapped(psycopg.ServerCursor, "execute", psycopg_statement),
    ]
    connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def psycopg_connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
        made = connect(cls, *args, **kwargs)
        connection(made)
        return made

    psycopg.Connection.connect = classmethod(psycopg_connect)  # type: ignore[method-assign]
    try:
        yield count
    finally:
        psycopg.Connection.connect = classmethod(connect)  # type: ignore[method-assign]
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


def described(query: Any) -> str:
    """A statement on one line, after its callers in dogana's own code (innermost first)."""
    if isinstance(query, bytes):
        query = query.decode("utf-8", "replace")
    elif not isinstance(query, str):
        query = repr(query)
    callers = []
    frame: Any = sys._getframe(1)
    while frame is not None and len(callers) < 4:
        name = frame.f_code.co_filename
        if "/dogana_provider/" in name or "/dogana_core/" in name:
            where = name.rsplit("/dogana_", 1)[1].split("/", 1)[1]
            callers.append(f"{where}:{frame.f_lineno} {frame.f_code.co_name}")
        frame = frame.f_back
    return f"{' < '.join(callers) or '?'}\n    {' '.join(query.split())[:300]}"


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One variant in this process; what it measured."""
    home = Path(args.home)
    database = DATABASES[args.database](args.run, home)
    # Loaded in every variant's process before it is timed, as in a task's: Airflow forks the
    # task's process from its supervisor, whose module a connection's look-up imports otherwise
    # (0.1 s), inside the run of every variant that looks a connection up.
    import airflow.sdk.execution_time.supervisor  # noqa: F401

    if args.child == "dogana":
        # The import baseline: everything a delivery loads, loaded before any row moves.
        import pyarrow.parquet  # noqa: F401

        import dogana_provider.operators.extract
        import dogana_provider.operators.gate
        import dogana_provider.operators.publish  # noqa: F401

        if args.database == "postgresql":
            import adbc_driver_postgresql.dbapi  # noqa: F401
        baseline = rss_mib()
        profiler = None
        if args.profile_to:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        peaks: dict[str, float] = {}
        cpu: dict[str, dict[str, float]] = {}
        started = time.perf_counter()
        steps = dogana_steps(
            home,
            "full",
            peaks,
            readers=int(args.readers or 1),
            cpu=cpu if args.database == "postgresql" else None,
            bench_run=args.run,
        )
        seconds = time.perf_counter() - started
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile_to)
        turns: list[tuple[float, dict[str, float]]] = []
        for turn in range(args.change_rounds if not args.full_only else 0):
            settle(database)
            database.change(args.rows, turn)
            # The changes delivery runs in tasks of its own under Airflow: it does not pay for
            # collecting what the full delivery left (a collection of the oldest generation
            # walks every object the imports made, 0.2 s here, and was due when it began).
            gc.collect()
            if args.profile_to and turn == 0:
                profiler = cProfile.Profile()
                profiler.enable()
            started = time.perf_counter()
            changes = dogana_steps(home, "changes")
            turns.append((time.perf_counter() - started, changes))
            if profiler is not None and turn == 0:
                profiler.disable()
                profiler.dump_stats(args.profile_to.replace(".prof", ".changes.prof"))
        few = few_rows(database, home, args.rows, args.change_rounds) if turns else {}
        measured = {
            **few,
            "seconds": seconds,
            "steps": steps,
            "baseline_mib": baseline,
            "peak_mib": max(peaks.values()),
            "step_peaks_mib": peaks,
            "step_cpu": cpu,
        }
        if turns:
            changes_seconds = statistics.median_low(took for took, _ in turns)
            measured["changes_seconds"] = changes_seconds
            measured["changes_rounds"] = [took for took, _ in turns]
            measured["changes_steps"] = next(
                by_step for took, by_step in turns if took == changes_seconds
            )
        return measured
    if args.child == "GenericTransfer":
        from airflow.providers.common.sql.operators.generic_transfer import GenericTransfer

        names = ", ".join(COLUMNS)
        operator = GenericTransfer(
            task_id="transfer",
            source_conn_id="bench_source",
            destination_conn_id="bench_target",
            sql=f"SELECT {names} FROM {TABLE} ORDER BY id",
            destination_table=GENERIC_TABLE,
            preoperator=[
                f"DROP TABLE IF EXISTS {GENERIC_TABLE}",
                f"CREATE TABLE {GENERIC_TABLE} ({DDL[args.database]})",
            ],
            page_size=PAGE_SIZE,
            insert_args={
                "commit_every": PAGE_SIZE,
                "executemany": True,
                "fast_executemany": True,
                "target_fields": list(COLUMNS),
            },
        )
        baseline = rss_mib()
        started = time.perf_counter()
        operator.execute({})
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"seconds": seconds, "baseline_mib": baseline, "peak_mib": peak}
    if args.child in ("dag.test", "airflow only"):
        return dag_test(home, args.child)
    raise SystemExit(f"unknown variant {args.child}")


DAG_FILES = {
    "dag.test": """
        from dogana_provider.operators.extract import ExtractOperator
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator

        with DAG("bench_dogana", schedule=None, start_date=START, catchup=False) as dag:
            contract = {contract!r}
            plan = PlanDeliveryOperator(
                task_id="plan", contract=contract, receiver_conn_id="bench_target", shape="full"
            )
            extract = ExtractOperator(
                task_id="extract",
                source_conn_id="bench_source",
                contract=contract,
                output_folder={output!r},
            )
            gate = GateOperator(task_id="gate", receiver_conn_id="bench_target")
            publish = PublishOperator(task_id="publish", receiver_conn_id="bench_target")
            plan >> extract >> gate >> publish
    """,
    "airflow only": """
        from airflow.sdk import task

        with DAG("bench_airflow_only", schedule=None, start_date=START, catchup=False) as dag:

            @task(task_id="nothing")
            def nothing():
                return None

            nothing()
    """,
}


def dag_test(home: Path, variant: str) -> dict[str, Any]:
    import importlib.util

    body = textwrap.dedent(DAG_FILES[variant]).format(
        contract=str(home / f"{TABLE}.contract.json"), output=(home / "dag_deliveries").as_uri()
    )
    header = "import datetime\nfrom airflow.sdk import DAG\n"
    header += "START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)\n"
    path = home / "dags" / f"bench_{variant.replace(' ', '_').replace('.', '_')}.py"
    path.write_text(header + body, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    run = module.dag.test()
    seconds = time.perf_counter() - started
    from airflow.utils.session import create_session

    tasks = {}
    with create_session() as session:
        for ti in run.get_task_instances(session=session):
            if ti.start_date is not None and ti.end_date is not None:
                tasks[ti.task_id] = (ti.end_date - ti.start_date).total_seconds()
    return {"seconds": seconds, "state": str(run.state), "tasks": tasks}


def dlt_environment(packages: list[str]) -> tuple[Path, str | None]:
    """dlt's own environment with packages installed: its python, and why not where it could
    not be made (the environment is then removed, so the next run starts it again)."""
    python = DLT_VENV / "bin" / "python"
    make = "" if python.exists() else f"{sys.executable} -m venv {DLT_VENV} && "
    # pip returns at once when every package is there already.
    made = subprocess.run(
        f"{make}{python} -m pip install -q --disable-pip-version-check "
        + " ".join(f"'{package}'" for package in packages),
        shell=True,
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        shutil.rmtree(DLT_VENV, ignore_errors=True)
        return python, f"its environment could not be made: {made.stderr[-300:]}"
    return python, None


def dlt_run(database: Database, home: Path) -> dict[str, Any]:
    """dlt's sql_table into the target, in its own environment; {'skipped': why} when it cannot."""
    python, failed = dlt_environment(DLT_PACKAGES)
    if failed:
        return {"skipped": failed}
    # dlt's postgres destination refuses credentials without a password; a server that trusts
    # local connections (the tests') ignores the one given.
    parts = urlsplit(database.target_url())
    if parts.password is None and parts.username:
        parts = parts._replace(netloc=f"{parts.username}:unused@{parts.netloc.split('@', 1)[1]}")
    target = urlunsplit(parts)
    script = home / "dlt_run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, resource, time
            import dlt
            from dlt.sources.sql_database import sql_table

            table = sql_table(credentials={database.source_url()!r}, table={TABLE!r},
                              backend="pyarrow")
            pipeline = dlt.pipeline(pipeline_name="bench", pipelines_dir={str(home / "dlt")!r},
                destination=dlt.destinations.postgres({target!r}),
                dataset_name="dlt_bench")
            started = time.perf_counter()
            pipeline.run(table, write_disposition="replace")
            print(json.dumps({{"seconds": time.perf_counter() - started,
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, env=clean_env(home)
    )
    if done.returncode != 0:
        errors = [
            line for line in done.stderr.splitlines() if "Error" in line or "Exception" in line
        ]
        return {"skipped": f"it failed: {(errors or [done.stderr[-300:]])[-1][:400]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def sling_run(database: Database) -> dict[str, Any]:
    """Sling's full-refresh of the table into the emptied target, its peak RSS by
    /usr/bin/time; skipped, saying why, without a binary that runs."""
    if not SLING_BINARY:
        return {"skipped": "no sling binary (set SLING_BINARY; PyPI sling 1.6.x downloads it)"}
    home = database.home
    env = {
        **clean_env(home),
        "SLING_SOURCE": database.source_url() + "?sslmode=disable",
        "SLING_TARGET": database.target_url() + "?sslmode=disable",
        "SLING_HOME_DIR": str(home / "sling"),
    }
    sizes = home / "sling.rss"
    command = ["/usr/bin/time", "-f", "%M", "-o", str(sizes), SLING_BINARY, "run"]
    command += ["--src-conn", "SLING_SOURCE", "--src-stream", f"public.{TABLE}"]
    command += ["--tgt-conn", "SLING_TARGET", "--tgt-object", f"public.{TABLE}"]
    command += ["--mode", "full-refresh"]
    log = home / "sling.log"
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        return {"failed": f"exit {done.returncode}, log {log}:\n{tail}"}
    version = subprocess.run([SLING_BINARY, "--version"], capture_output=True, text=True)
    peak = int(sizes.read_text().split()[-1]) / 1024 if sizes.is_file() else None
    return {"seconds": seconds, "peak_mib": peak, "version": version.stdout.strip()}


def clean_env(home: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHONPATH"))}


def airflow_env(home: Path, database: Database) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW_CONN_BENCH_SOURCE": database.source_url(),
            "AIRFLOW_CONN_BENCH_TARGET": database.target_url(),
        }
    )
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    return env


def in_child(
    variant: str,
    database: Database,
    rows: int,
    profile: Path | None = None,
    *,
    change_rounds: int = CHANGE_ROUNDS,
    full_only: bool = False,
    readers: int = 1,
) -> dict:
    home = database.home
    result = home / "result.json"
    result.unlink(missing_ok=True)
    command = [sys.executable, __file__, "--child", variant, "--database", database.name]
    command += ["--home", str(home), "--run", database.run, "--rows", str(rows)]
    command += ["--result", str(result), "--change-rounds", str(change_rounds)]
    if profile is not None:
        command += ["--profile-to", str(profile)]
    if full_only:
        command += ["--full-only", "1"]
    if readers > 1:
        command += ["--readers", str(readers)]
    log = home / f"{database.name}.{variant.replace(' ', '_')}.log"
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(
            command, env=airflow_env(home, database), stdout=output, stderr=subprocess.STDOUT
        )
    if done.returncode != 0 or not result.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        return {"failed": f"exit {done.returncode}, log {log}:\n{tail}"}
    return json.loads(result.read_text(encoding="utf-8"))


def settle(database: Database) -> None:
    """What the machine does in the minutes after a load, done now: the database's own
    background writes, then the kernel's (a commit's fsync would otherwise write out every page
    the load left in the page cache, SQLite's above all)."""
    database.settle()
    os.sync()


def floor_changes(database: Database, rows: int, rounds: int) -> dict[str, Any]:
    """The changes the dogana variant delivers, applied by the database's own tools: the changed
    rows copied out by the cursor column into a temporary table, then the published rows with
    their keys replaced, in one transaction. In the state dogana's changes delivery meets: the
    full load settled, then the source changed."""
    where = database.pages(rows)
    turns: list[float] = []
    for turn in range(rounds):
        settle(database)
        # The changed rows are those past the source's clock before the change and not past it
        # after, as a changes read takes them; SQLite's clock counts milliseconds.
        mark = database.mark()
        time.sleep(0.002)
        database.change(rows, turn)
        started = time.perf_counter()
        database.floor_changes(mark)
        turns.append(time.perf_counter() - started)
    return {
        "changes_seconds": statistics.median_low(turns),
        "changes_rounds": turns,
        "changes_pages": where,
    }


def timed(action: Any) -> dict[str, Any]:
    started = time.perf_counter()
    action()
    return {"seconds": time.perf_counter() - started}


# The run ------------------------------------------------------------------------------------------


def measure(database: Database, rows: int, args: argparse.Namespace) -> dict[str, dict]:
    """Every variant on one database, each into an emptied target; checked against the source."""
    print(f"\n{database.name}: {rows:,} rows x {len(COLUMNS)} columns", flush=True)
    started = time.perf_counter()
    database.generate(rows)
    print(f"  source generated in {time.perf_counter() - started:.1f} s", flush=True)
    variants = ["floor", "dogana", "GenericTransfer"]
    if rows > args.rows:  # --large: what 10M rows tell (memory, changes) against the floor
        variants = ["floor", "dogana"]
    elif database.name == "postgresql" and not args.quick:
        variants += ["dlt", "dag.test", "airflow only"]
    if database.name == "postgresql":
        # The table read by two readers in its one snapshot (sources/parallel.py), and Sling.
        variants[2:2] = [PARALLEL, "Sling"]
    rounds: dict[str, list[dict]] = {}
    # The rounds take the variants in turn, so that what the shared machine does meanwhile
    # falls on each of them alike.
    for turn in range(max(1, args.rounds)):
        for variant in variants:
            if turn and variant in ("dlt", "dag.test", "airflow only", "Sling"):
                continue
            database.reset_target()
            if variant == "floor":
                run = timed(database.floor)
                if not turn:
                    run.update(floor_changes(database, rows, args.change_rounds))
                table = TABLE
            elif variant == "dlt":
                run = dlt_run(database, database.home)
                table = f"dlt_bench.{TABLE}"
            elif variant == "Sling":
                run = sling_run(database)
                table = TABLE
            elif variant == PARALLEL:
                run = in_child("dogana", database, rows, full_only=True, readers=2)
                table = TABLE
            else:
                profile = database.home / f"{database.name}.prof" if args.profile else None
                run = in_child(
                    variant,
                    database,
                    rows,
                    profile if variant == "dogana" and not turn else None,
                    change_rounds=args.change_rounds,
                    full_only=turn > 0,
                )
                table = GENERIC_TABLE if variant == "GenericTransfer" else TABLE
            if variant != "airflow only" and "seconds" in run:
                # Against the source as it is now: dogana's process changed it after its full
                # read, and delivered those changes too.
                now = database.aggregate(database.source_url(), TABLE)
                run["same"] = database.aggregate(database.target_url(), table) == now
            print(f"  {variant}: {describe(run)}", flush=True)
            rounds.setdefault(variant, []).append(run)
    return {variant: median_round(runs) for variant, runs in rounds.items()}


def median_round(runs: list[dict]) -> dict:
    """The first round's measures, with the median round's seconds (and steps), every
    round's seconds, and whether every round's rows were the source's."""
    done = [run for run in runs if "seconds" in run]
    if len(runs) == 1 or len(done) < len(runs):
        return runs[0] if len(done) == len(runs) else next(r for r in runs if "seconds" not in r)
    median = statistics.median_low(run["seconds"] for run in done)
    middle = next(run for run in done if run["seconds"] == median)
    merged = {**runs[0], "seconds": median, "rounds": [run["seconds"] for run in done]}
    for measure in ("steps", "step_peaks_mib", "step_cpu", "peak_mib", "baseline_mib"):
        if measure in middle:
            merged[measure] = middle[measure]
    if "same" in runs[0]:
        merged["same"] = all(run.get("same") for run in done)
    return merged


def describe(run: dict) -> str:
    if "failed" in run:
        return "FAILED " + run["failed"]
    if "skipped" in run:
        return "skipped: " + run["skipped"]
    text = f"{run['seconds']:.2f} s"
    if "same" in run:
        text += ", same as source" if run["same"] else ", DIFFERENT from the source"
    return text


def report(database: str, rows: int, found: dict[str, dict]) -> list[str]:
    """The table of one database; the targets' lines."""
    floor = found["floor"].get("seconds")
    print(f"\n{database}, {rows:,} rows")
    print(f"{'variant':<17} {'seconds':>8} {'x floor':>8} {'rows/s':>11}  rows")
    for variant, run in found.items():
        if "seconds" not in run:
            print(f"{variant:<17} {describe(run)}")
            continue
        seconds = run["seconds"]
        ratio = f"{seconds / floor:>7.2f}x" if floor else f"{'':>8}"
        same = {True: "same as source", False: "DIFFERENT", None: ""}[run.get("same")]
        if variant == "airflow only":
            same = "(one empty task under dag.test(): Airflow's own cost)"
        each = ", ".join(f"{took:.2f}" for took in run.get("rounds", []))
        if each:
            same += f" (median of {each})"
        print(f"{variant:<17} {seconds:>8.2f} {ratio} {rows / seconds:>11,.0f}  {same}")
    dogana = found["dogana"]
    lines = []
    if "seconds" not in dogana:
        return [f"{database}: dogana did not run"]
    print(f"dogana execute() by step: {by_step(dogana)}")
    if "dag.test" in found and "tasks" in found["dag.test"]:
        tasks = found["dag.test"]["tasks"]
        apart = ", ".join(
            f"{task} {tasks[task]:.2f} s ({tasks[task] - dogana['steps'][task]:+.2f})"
            for task in dogana["steps"]
            if task in tasks
        )
        print(f"dogana dag.test() by task (Airflow's cost beside execute()): {apart}")
        if "seconds" in found.get("airflow only", {}):
            print(
                f"dag.test() of one empty task: {found['airflow only']['seconds']:.2f} s "
                "(the run's fixed cost, before and after its tasks)"
            )
    added = dogana["peak_mib"] - dogana["baseline_mib"]
    memory = ", ".join(
        f"{step} {peak - dogana['baseline_mib']:.0f} MB"
        for step, peak in dogana["step_peaks_mib"].items()
    )
    print(
        f"dogana memory: import baseline {dogana['baseline_mib']:.0f} MB, peak "
        f"{dogana['peak_mib']:.0f} MB, rows add {added:.0f} MB (peak RSS above the baseline by "
        f"step: {memory})"
    )
    lines += parallel(found, floor)
    changes = dogana["changes_seconds"]
    steps = ", ".join(f"{step} {s:.2f} s" for step, s in dogana["changes_steps"].items())
    by_hand = found["floor"].get("changes_seconds")
    if by_hand and floor:
        lying = found["floor"].get("changes_pages")
        print(
            f"floor's changes, {CHANGED:,} spread rows by the database's own tools: "
            f"{by_hand:.2f} s {rounds_text(found['floor'])}, {by_hand / floor:.1%} of its full copy"
            + (f"; the first round's rows lie on {lying}" if lying else "")
        )
    print(
        f"dogana changes delivery of {CHANGED:,} spread rows: {changes:.2f} s "
        f"{rounds_text(dogana)}, "
        f"{changes / dogana['seconds']:.1%} of the full delivery"
        + (f", {changes / by_hand:.2f}x the floor's changes" if by_hand else "")
        + f" (median round: {steps})"
    )
    if "few_seconds" in dogana:
        each = ", ".join(f"{took:.3f}" for took in dogana["few_rounds"])
        print(
            f"a {FEW}-row changes delivery: {dogana['few_seconds']:.3f} s (median of {each}); "
            f"{dogana['few_statements']} statements on {dogana['few_connections']} connections"
        )
    ratio = dogana["seconds"] / floor if floor else float("inf")
    generic = found.get("GenericTransfer", {}).get("seconds")
    ahead = generic / dogana["seconds"] if generic else 0.0
    if database == "postgresql":
        lines.append(f"PostgreSQL within 2x of the floor: {ratio:.2f}x, {met(ratio <= 2)}")
    elif database == "sqlite":
        if generic:  # not run at 10M rows
            lines.append(f"SQLite 2.5x ahead of GenericTransfer: {ahead:.2f}x, {met(ahead >= 2.5)}")
        lines.append(f"SQLite within 4x of the floor: {ratio:.2f}x, {met(ratio <= 4)}")
    else:
        lines.append(f"MariaDB within 3x of the floor: {ratio:.2f}x, {met(ratio <= 3)}")
        if generic:
            lines.append(f"MariaDB ahead of GenericTransfer: {ahead:.2f}x, {met(ahead > 1)}")
    lines.append(f"{database} rows add under 100 MB: {added:.0f} MB, {met(added < 100)}")
    share = changes / dogana["seconds"]
    bound = f" (the floor's changes alone: {by_hand / dogana['seconds']:.1%})" if by_hand else ""
    lines.append(f"{database} changes under 5% of full: {share:.1%}, {met(share < 0.05)}{bound}")
    return [f"{rows:>10,} rows  {line}" for line in lines]


def parallel(found: dict[str, dict], floor: float | None) -> list[str]:
    """The two readers' delivery beside one reader's: speed-up, each step's, memory, Sling;
    the targets' lines."""
    one, two = found["dogana"], found.get(PARALLEL, {})
    if "seconds" not in two:
        return []
    steps = ", ".join(
        f"{step} {took:.2f} s ({one['steps'][step] / took:.2f}x)"
        for step, took in two["steps"].items()
    )
    print(f"{PARALLEL} execute() by step: {by_step(two)}")
    speedup = one["seconds"] / two["seconds"]
    added = two["peak_mib"] - two["baseline_mib"]
    print(
        f"{PARALLEL}: {speedup:.2f}x one reader's delivery; by step (one reader's / two's): "
        f"{steps}; rows add {added:.0f} MB in its one process (both readers' threads)"
    )
    print(
        f"what limits it: {os.cpu_count()} cores, shared (load average now {load()}); two "
        "readers (extract) and two loaders (gate) each add a server backend beside this "
        "process's threads, so a step gains at most what a free core gives: its CPU beside its "
        "seconds above says how much it had; the row checks are one scan and publish one "
        "statement (the swap and the key index): neither is split"
    )
    sling = found.get("Sling", {})
    if "seconds" in sling:
        memory = f", peak RSS {sling['peak_mib']:.0f} MB" if sling.get("peak_mib") else ""
        print(f"Sling ({sling.get('version', '?')}): {sling['seconds']:.2f} s{memory}")
    ratio = two["seconds"] / floor if floor else float("inf")
    return [
        f"PostgreSQL N=2 within 1.2x of the psql pipe: {ratio:.2f}x, {met(ratio <= 1.2)}",
        f"PostgreSQL N=2 speed-up over N=1: {speedup:.2f}x",
        f"PostgreSQL N=2 rows add under 100 MB: {added:.0f} MB, {met(added < 100)}",
    ]


def by_step(run: dict[str, Any]) -> str:
    """Each step's seconds and, where measured, the CPU seconds its process and the server's
    processes spent in it (ServerCpu): what is left of the seconds was spent waiting."""
    cpu = run.get("step_cpu") or {}
    texts = []
    for step, took in run["steps"].items():
        text = f"{step} {took:.2f} s"
        if step in cpu:
            spent = cpu[step]
            text += f" (CPU: dogana {spent['client']:.2f} s, server {spent['server']:.2f} s)"
        texts.append(text)
    return ", ".join(texts)


def rounds_text(run: dict[str, Any]) -> str:
    each = ", ".join(f"{seconds:.2f}" for seconds in run.get("changes_rounds", []))
    return f"(median of {each})"


def flat(added: dict[str, dict[int, float]]) -> list[str]:
    """Whether what rows add stays flat from the smallest run to the largest, per database:
    within FLAT_MIB, which is about what one run's allocator pages vary by."""
    lines = []
    for database, by_rows in added.items():
        if len(by_rows) < 2:
            continue
        (small, low), (large, high) = min(by_rows.items()), max(by_rows.items())
        lines.append(
            f"{'':>17}{database} rows add flat from {small:,} to {large:,} rows: {low:.0f} MB "
            f"-> {high:.0f} MB, {met(high < 100 and high - low <= FLAT_MIB)}"
        )
    return lines


def flat_changes(changed: dict[str, dict[int, tuple[float, float | None]]]) -> list[str]:
    """Whether the changes delivery costs what its rows cost, not what the table does: within
    FLAT_CHANGES from the smallest run to the largest, beside the floor's own changes."""
    lines = []
    for database, by_rows in changed.items():
        if len(by_rows) < 2:
            continue
        (small, (low, hand_low)), (large, (high, hand_high)) = (
            min(by_rows.items()),
            max(by_rows.items()),
        )
        floor = (
            f" (the floor's {hand_low:.2f} s -> {hand_high:.2f} s)"
            if hand_low and hand_high
            else ""
        )
        lines.append(
            f"{'':>17}{database} changes flat from {small:,} to {large:,} rows: {low:.2f} s -> "
            f"{high:.2f} s, {met(high <= FLAT_CHANGES * low)}{floor}"
        )
    return lines


def met(condition: bool) -> str:
    return "met" if condition else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--large",
        action="store_true",
        help="also 10,000,000 rows (PostgreSQL and SQLite: floor, dogana; PostgreSQL dogana "
        "N=2 and Sling too) and 50,000,000 rows (PostgreSQL)",
    )
    parser.add_argument(
        "--no-huge",
        action="store_true",
        help="with --large, not the 50,000,000 rows",
    )
    parser.add_argument(
        "--large-only",
        action="store_true",
        help="with --large, the large sizes alone (not --rows)",
    )
    parser.add_argument(
        "--databases",
        default="postgresql,sqlite,mysql",
        help="comma-separated, of " + ", ".join(DATABASES),
    )
    parser.add_argument("--quick", action="store_true", help="no dlt, no dag.test()")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile dogana's full delivery and its changes delivery, apart",
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench's folder")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="full deliveries per variant, taken in turn, the median printed (the changes "
        "deliveries are measured in the first round)",
    )
    parser.add_argument(
        "--change-rounds",
        type=positive,
        default=CHANGE_ROUNDS,
        help=f"changes of {CHANGED:,} spread rows applied by the floor and delivered by "
        f"dogana, and dogana's changes deliveries of {FEW} rows: this many of each, each of "
        f"other rows, the median printed (default {CHANGE_ROUNDS}); 1 runs each kind once, "
        "to see that it still runs (tests/bench/test_pipeline_smoke.py)",
    )
    hidden_options = ("--child", "--database", "--home", "--run", "--result", "--profile-to")
    for hidden in (*hidden_options, "--full-only", "--readers"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        measured = child(args)
        Path(args.result).write_text(json.dumps(measured), encoding="utf-8")
        return 0

    run = f"{os.getpid()}_{time.time_ns() % 10**6}"
    top = Path(tempfile.mkdtemp(prefix="dogana-bench-pipeline-"))
    print(f"code {revision()}; load average before: {load()}; folder {top}")
    targets: list[str] = []
    sizes = [(name, args.rows) for name in args.databases.split(",")]
    if args.large:
        # MariaDB's 10M rows would take as long again as the rest together.
        sizes += [(name, 10_000_000) for name, _ in sizes if name in ("postgresql", "sqlite")]
    if args.large and not args.no_huge:
        sizes += [(name, 50_000_000) for name, _ in sizes if name == "postgresql"][:1]
    if args.large and args.large_only:
        sizes = [(name, rows) for name, rows in sizes if rows > args.rows]
    added: dict[str, dict[int, float]] = {}
    changed: dict[str, dict[int, tuple[float, float | None]]] = {}
    try:
        migrated = None
        for name, rows in sizes:
            home = top / f"{name}_{rows}"
            (home / "dags").mkdir(parents=True)
            contract_file(home)
            database = DATABASES[name](run, home)
            if name == "postgresql" and not args.quick:
                if migrated is None:
                    migrate(airflow_env(home, database))
                    migrated = home / "airflow.db"
                elif migrated != home / "airflow.db":
                    shutil.copy(migrated, home / "airflow.db")
            try:
                found = measure(database, rows, args)
                targets += report(name, rows, found)
                dogana = found["dogana"]
                if "peak_mib" in dogana:
                    added.setdefault(name, {})[rows] = dogana["peak_mib"] - dogana["baseline_mib"]
                    by_hand = found["floor"].get("changes_seconds")
                    changed.setdefault(name, {})[rows] = (dogana["changes_seconds"], by_hand)
            finally:
                database.drop()
        print(f"\nload average after: {load()}")
        targets += flat(added) + flat_changes(changed)
        print("\n".join(["targets:", *(f"  {line}" for line in targets)]))
        if args.profile:
            print(f"profiles (cProfile) in {top}/*/*.prof")
    finally:
        if args.keep or args.profile:
            print(f"kept {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)
    return 0


def positive(text: str) -> int:
    """An option's whole number of at least 1."""
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"airflow db migrate failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def revision() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "status",
                "--porcelain",
                "--",
                "dogana_core",
                "dogana_provider",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return f"{ROOT}, not a git checkout"
    files = [line for line in changed if line.strip()]
    return head + (f" with {len(files)} changed files in the packages" if files else "")


def load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


if __name__ == "__main__":
    sys.exit(main())
