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
    dogana dag.test   (PostgreSQL) the same four operators as a DAG run with dag.test(), beside
                      a one-task DAG's run: what Airflow itself adds per task

Each variant runs in its own process into a target emptied before it, so its peak memory is its
own; "rows add" is a step's peak RSS (the kernel's VmHWM, reset before each step) above the
process's RSS once Airflow, pyarrow, the drivers and dogana are imported, before any row moves,
printed per step; the delivery's is the largest, and should stay flat from 1M to 10M rows.
Every target is then compared with the source by count and an aggregate of every column. After
the full delivery, dogana's process changes 10,000 rows spread across the source (every
N/10,000th id) and delivers them as a changes delivery, read by the cursor column, which the
source indexes as a source read by changes would.

The targets (issue 9): PostgreSQL within 2x of the floor; SQLite at least 2x ahead of
GenericTransfer; MariaDB within 3x of the floor and ahead of GenericTransfer; rows add under
100 MB, flat from 1M to 10M rows; the changes delivery under 5% of the full one, flat in N. Not a
timed test: it prints ratios measured in this one run, it never fails on time.

    PYTHONPATH=. .venv/bin/python bench/pipeline.py                   # 1,000,000 rows
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --rows 100000 --databases postgresql
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --large           # and 10M: PostgreSQL, SQLite
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --profile         # cProfile of dogana's runs
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
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
FLAT_MIB = 10  # what rows add may grow by from the smallest run to the largest and be "flat"
DLT_VENV = Path.home() / ".cache" / "dogana-bench" / "dlt"
DLT_PACKAGES = ["dlt[postgres,sql_database]>=1.0", "pyarrow", "sqlalchemy>=2", "psycopg[binary]"]

COLUMNS = ("id", "customer", "amount", "order_day", "updated_at", "paid")
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

    def __init__(self, run: str, home: Path) -> None:
        self.run, self.home = run, home

    def source_url(self) -> str: ...
    def target_url(self) -> str: ...
    def generate(self, rows: int) -> None: ...
    def reset_target(self) -> None: ...
    def floor(self) -> None: ...
    def drop(self) -> None: ...
    def change(self, rows: int) -> None: ...
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
                "TIMESTAMPTZ '2025-01-01 00:00:00+00' + i * INTERVAL '17.000123 seconds', "
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

    def change(self, rows: int) -> None:
        step = max(1, rows // CHANGED)
        with psycopg.connect(self.source_url(), autocommit=True) as source:
            source.execute(
                f"UPDATE {TABLE} SET amount = amount + 1, updated_at = clock_timestamp() "
                f"WHERE id % {step} = 0 AND id <= {step * CHANGED}"
            )

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
            "strftime('%Y-%m-%d %H:%M:%S', 1735689600 + i * 17, 'unixepoch') "
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

    def change(self, rows: int) -> None:
        step = max(1, rows // CHANGED)
        connection = sqlite3.connect(self._file("source"))
        connection.execute(
            f"UPDATE {TABLE} SET amount = amount + 1, "
            "updated_at = strftime('%Y-%m-%d %H:%M:%f+00:00', 'now') "
            f"WHERE id % {step} = 0 AND id <= {step * CHANGED}"
        )
        connection.commit()
        connection.close()

    def drop(self) -> None:
        return None  # the files go with the bench's folder


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
            "TIMESTAMP '2025-01-01 00:00:00' + INTERVAL (seq * 17000123) MICROSECOND, "
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

    def change(self, rows: int) -> None:
        step = max(1, rows // CHANGED)
        self._run(
            self._db("source"),
            f"UPDATE {TABLE} SET amount = amount + 1, updated_at = UTC_TIMESTAMP(6) "
            f"WHERE id % {step} = 0 AND id <= {step * CHANGED}",
        )

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


def dogana_steps(home: Path, shape: str, peaks: dict[str, float] | None = None) -> dict[str, float]:
    """The four operators' execute(), in order, as the DAG wires them; seconds per step, and
    into peaks, when given, each step's peak RSS in MiB."""
    from dogana_provider.operators.extract import ExtractOperator
    from dogana_provider.operators.gate import GateOperator
    from dogana_provider.operators.plan import PlanDeliveryOperator
    from dogana_provider.operators.publish import PublishOperator

    contract = str(home / f"{TABLE}.contract.json")
    seconds: dict[str, float] = {}
    peaks = {} if peaks is None else peaks
    reset_peak()
    started = time.perf_counter()
    request = PlanDeliveryOperator(
        task_id="plan", contract=contract, receiver_conn_id="bench_target", shape=shape
    ).execute({"data_interval_end": datetime.now(UTC)})  # a run's end, as a scheduled run has
    seconds["plan"] = time.perf_counter() - started
    peaks["plan"] = peak_mib()
    reset_peak()
    started = time.perf_counter()
    delivery = ExtractOperator(
        task_id="extract",
        source_conn_id="bench_source",
        contract=contract,
        request=request,
        output_folder=(home / "deliveries").as_uri(),
    ).execute({})
    seconds["extract"] = time.perf_counter() - started
    peaks["extract"] = peak_mib()
    reset_peak()
    started = time.perf_counter()
    decision = GateOperator(
        task_id="gate", receiver_conn_id="bench_target", delivery=delivery
    ).execute({})
    seconds["gate"] = time.perf_counter() - started
    peaks["gate"] = peak_mib()
    reset_peak()
    started = time.perf_counter()
    PublishOperator(task_id="publish", receiver_conn_id="bench_target", decision=decision).execute(
        {}
    )
    seconds["publish"] = time.perf_counter() - started
    peaks["publish"] = peak_mib()
    return seconds


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One variant in this process; what it measured."""
    home = Path(args.home)
    database = DATABASES[args.database](args.run, home)
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
        started = time.perf_counter()
        steps = dogana_steps(home, "full", peaks)
        seconds = time.perf_counter() - started
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile_to)
        database.change(args.rows)
        # The changes delivery runs in tasks of its own under Airflow: it does not pay for
        # collecting what the full delivery left (a collection of the oldest generation walks
        # every object the imports made, 0.2 s here, and was due when the changes began).
        gc.collect()
        if args.profile_to:
            profiler = cProfile.Profile()
            profiler.enable()
        started = time.perf_counter()
        changes = dogana_steps(home, "changes")
        changes_seconds = time.perf_counter() - started
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile_to.replace(".prof", ".changes.prof"))
        return {
            "seconds": seconds,
            "steps": steps,
            "baseline_mib": baseline,
            "peak_mib": max(peaks.values()),
            "step_peaks_mib": peaks,
            "changes_seconds": changes_seconds,
            "changes_steps": changes,
        }
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


def dlt_run(database: Database, home: Path) -> dict[str, Any]:
    """dlt's sql_table into the target, in its own environment; {'skipped': why} when it cannot."""
    python = DLT_VENV / "bin" / "python"
    make = "" if python.exists() else f"{sys.executable} -m venv {DLT_VENV} && "
    # pip returns at once when every package is there already.
    made = subprocess.run(
        f"{make}{python} -m pip install -q --disable-pip-version-check "
        + " ".join(f"'{package}'" for package in DLT_PACKAGES),
        shell=True,
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        shutil.rmtree(DLT_VENV, ignore_errors=True)
        return {"skipped": f"its environment could not be made: {made.stderr[-300:]}"}
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


def in_child(variant: str, database: Database, rows: int, profile: Path | None = None) -> dict:
    home = database.home
    result = home / "result.json"
    result.unlink(missing_ok=True)
    command = [sys.executable, __file__, "--child", variant, "--database", database.name]
    command += ["--home", str(home), "--run", database.run, "--rows", str(rows)]
    command += ["--result", str(result)]
    if profile is not None:
        command += ["--profile-to", str(profile)]
    log = home / f"{database.name}.{variant.replace(' ', '_')}.log"
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(
            command, env=airflow_env(home, database), stdout=output, stderr=subprocess.STDOUT
        )
    if done.returncode != 0 or not result.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        return {"failed": f"exit {done.returncode}, log {log}:\n{tail}"}
    return json.loads(result.read_text(encoding="utf-8"))


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
    found: dict[str, dict] = {}
    variants = ["floor", "dogana", "GenericTransfer"]
    if rows > args.rows:  # --large: what 10M rows tell (memory, changes) against the floor
        variants = ["floor", "dogana"]
    elif database.name == "postgresql" and not args.quick:
        variants += ["dlt", "dag.test", "airflow only"]
    for variant in variants:
        database.reset_target()
        if variant == "floor":
            found[variant] = timed(database.floor)
            table = TABLE
        elif variant == "dlt":
            found[variant] = dlt_run(database, database.home)
            table = f"dlt_bench.{TABLE}"
        else:
            profile = database.home / f"{database.name}.prof" if args.profile else None
            found[variant] = in_child(
                variant, database, rows, profile if variant == "dogana" else None
            )
            table = GENERIC_TABLE if variant == "GenericTransfer" else TABLE
        if variant != "airflow only" and "seconds" in found[variant]:
            # Against the source as it is now: dogana's process changed it after its full read,
            # and delivered those changes too.
            now = database.aggregate(database.source_url(), TABLE)
            found[variant]["same"] = database.aggregate(database.target_url(), table) == now
        print(f"  {variant}: {describe(found[variant])}", flush=True)
    return found


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
        print(f"{variant:<17} {seconds:>8.2f} {ratio} {rows / seconds:>11,.0f}  {same}")
    dogana = found["dogana"]
    lines = []
    if "seconds" not in dogana:
        return [f"{database}: dogana did not run"]
    steps = ", ".join(f"{step} {s:.2f} s" for step, s in dogana["steps"].items())
    print(f"dogana execute() by step: {steps}")
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
    by_step = ", ".join(
        f"{step} {peak - dogana['baseline_mib']:.0f} MB"
        for step, peak in dogana["step_peaks_mib"].items()
    )
    print(
        f"dogana memory: import baseline {dogana['baseline_mib']:.0f} MB, peak "
        f"{dogana['peak_mib']:.0f} MB, rows add {added:.0f} MB (peak RSS above the baseline by "
        f"step: {by_step})"
    )
    changes = dogana["changes_seconds"]
    steps = ", ".join(f"{step} {s:.2f} s" for step, s in dogana["changes_steps"].items())
    print(
        f"dogana changes delivery of {CHANGED:,} spread rows: {changes:.2f} s, "
        f"{changes / dogana['seconds']:.1%} of the full delivery ({steps})"
    )
    ratio = dogana["seconds"] / floor if floor else float("inf")
    generic = found.get("GenericTransfer", {}).get("seconds")
    ahead = generic / dogana["seconds"] if generic else 0.0
    if database == "postgresql":
        lines.append(f"PostgreSQL within 2x of the floor: {ratio:.2f}x, {met(ratio <= 2)}")
    elif database == "sqlite":
        lines.append(f"SQLite 2x ahead of GenericTransfer: {ahead:.2f}x, {met(ahead >= 2)}")
    else:
        lines.append(f"MariaDB within 3x of the floor: {ratio:.2f}x, {met(ratio <= 3)}")
        lines.append(f"MariaDB ahead of GenericTransfer: {ahead:.2f}x, {met(ahead > 1)}")
    lines.append(f"{database} rows add under 100 MB: {added:.0f} MB, {met(added < 100)}")
    share = changes / dogana["seconds"]
    lines.append(f"{database} changes under 5% of full: {share:.1%}, {met(share < 0.05)}")
    return [f"{rows:>10,} rows  {line}" for line in lines]


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


def met(condition: bool) -> str:
    return "met" if condition else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--large",
        action="store_true",
        help="also 10,000,000 rows (PostgreSQL and SQLite: floor, dogana)",
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
    for hidden in ("--child", "--database", "--home", "--run", "--result", "--profile-to"):
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
    added: dict[str, dict[int, float]] = {}
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
            finally:
                database.drop()
        print(f"\nload average after: {load()}")
        targets += flat(added)
        print("\n".join(["targets:", *(f"  {line}" for line in targets)]))
        if args.profile:
            print(f"profiles (cProfile) in {top}/*/*.prof")
    finally:
        if args.keep or args.profile:
            print(f"kept {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)
    return 0


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
