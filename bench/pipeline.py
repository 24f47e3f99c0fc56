"""One PostgreSQL table moved to another PostgreSQL database: dogana's four operators against
common-sql's GenericTransfer, both as real Airflow DAG runs (dag.test()), in one run.

    dogana            plan >> extract >> gate >> publish: a complete (whole-table) delivery read
                      in one snapshot, written to Parquet, counted and hashed, staged and checked
                      in the target, published in one transaction, with the ledger and receipt
    GenericTransfer   what a user writes otherwise: SELECT ... ORDER BY id read page_size rows at
                      a time (LIMIT/OFFSET), each page written with insert_rows (executemany,
                      fast_executemany, one commit per page) into a table with the same key

The source is a generated table of N rows (bigint key, text with nulls, quotes, commas and
non-ASCII letters, numeric(12,2), integer, two timestamptz, a date), loaded with COPY into the
database dogana_bench_source_<run>; both variants write into the database
dogana_bench_target_<run>, created empty before each round, so the plan always finds an empty
ledger. Both live on the PostgreSQL of the tests (127.0.0.1:5432, trust auth) and are dropped at
the end (kept with --keep, or when a variant failed). With SQLAlchemy 2
PostgresHook runs on psycopg 3, whose executemany pipelines the inserts; fast_executemany then
changes nothing (it picks execute_values on psycopg2), and is set as a user would set it.

Each variant runs in its own process, so its peak memory (max RSS) is its own: the whole process,
Airflow's own share included, which the "airflow only" row (a one-task DAG) shows, as it shows
the seconds every dag.test() spends before its first task (the in-process execution API). Time
is the wall clock of dag.test(). Both targets are then compared with the source by count and by
an order-independent checksum computed in SQL. With --repeat the rounds alternate which variant
goes first and the table shows each variant's median round (of an even count, the lower middle).
The target (issue 6): dogana faster than GenericTransfer while adding the proofs. Not a timed
test: it prints, it never fails on time.

    PYTHONPATH=. .venv/bin/python bench/pipeline.py               # 1,000,000 rows
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --rows 20000
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --repeat 3    # medians, order alternating
    PYTHONPATH=. .venv/bin/python bench/pipeline.py --profile     # cProfile of each variant
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

SERVER = os.environ.get("DOGANA_BENCH_SERVER", "postgresql://postgres@127.0.0.1:5432")
# Databases of one run: dogana_bench_source_<run> and dogana_bench_target_<run>, dropped at its
# end, so that runs at the same time (the smoke test in someone's suite) never share a table.
SOURCE_DB = "dogana_bench_source"
TARGET_DB = "dogana_bench_target"
TABLE = "bench_orders"  # in the source; dogana publishes it under the same name in the target
GENERIC_TABLE = "bench_orders_generic"  # GenericTransfer's table in the target
SOURCE_CONN = "bench_source"
TARGET_CONN = "bench_target"
PAGE_SIZE = 50_000
COPY_BATCH = 100_000
T0 = datetime(2025, 1, 1, tzinfo=UTC)

COLUMNS = (
    ("id", "BIGINT PRIMARY KEY"),
    ("customer", "TEXT NOT NULL"),
    ("email", "TEXT"),
    ("note", "TEXT"),
    ("amount", "NUMERIC(12,2) NOT NULL"),
    ("quantity", "INTEGER NOT NULL"),
    ("created_at", "TIMESTAMPTZ NOT NULL"),
    ("updated_at", "TIMESTAMPTZ"),
    ("order_day", "DATE NOT NULL"),
)
DDL = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
NAMES = ", ".join(name for name, _ in COLUMNS)
NOTES = (
    "",
    "leave at the door",
    'call first, "fragile"',
    "Müller, 2nd floor",
    "ring twice; the bell is broken, knock loudly instead",
    "façade entrance — side gate",
    "no plastic",
    "deliver after 18:00, ask for Zoë",
)

# Count and an order-independent checksum of the rows, the same text for every table: each row
# becomes one canonical text (nulls written NULL, values quoted, times in UTC), whose md5's first
# 60 bits are summed. The published table may type columns wider (quantity as BIGINT), not
# differently, so the casts give one text per value.
CHECKSUM = """
SELECT count(*), coalesce(sum(('x' || substr(md5(concat_ws('|',
    id::text, quote_nullable(customer), quote_nullable(email), quote_nullable(note),
    quote_nullable(amount::numeric(12,2)::text), quote_nullable(quantity::bigint::text),
    quote_nullable(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')),
    quote_nullable(to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')),
    quote_nullable(order_day::text)
)), 1, 15))::bit(60)::bigint), 0)
FROM {table}
"""


def url(database: str) -> str:
    return f"{SERVER}/{database}"


# The source ---------------------------------------------------------------------------------------


def csv_field(value: Any) -> str:
    if value is None:
        return ""
    text = str(value)
    return '"' + text.replace('"', '""') + '"'


def source_rows(start: int, stop: int) -> str:
    """Rows start..stop-1 as CSV: an unquoted empty field is NULL, a quoted one the empty text."""
    lines = []
    for i in range(start, stop):
        created = T0 + timedelta(seconds=i * 17)
        updated = None if i % 7 == 0 else created + timedelta(minutes=i % 1440)
        fields = (
            str(i),
            csv_field(f"customer {i % 50_000:05d}"),
            "" if i % 20 == 0 else csv_field(f"user{i}@example.com"),
            "" if i % 3 == 0 else csv_field(NOTES[i % len(NOTES)]),
            f"{(i * 7919) % 10_000_000 / 100:.2f}",
            str(1 + i % 12),
            created.isoformat(),
            "" if updated is None else updated.isoformat(),
            (date(2025, 1, 1) + timedelta(days=i % 730)).isoformat(),
        )
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


def reset_database(database: str) -> None:
    """An empty database (the target: dogana's plan finds no ledger, so reads the whole table)."""
    drop_database(database)
    with psycopg.connect(url("postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")


def drop_database(database: str) -> None:
    with psycopg.connect(url("postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def prepare_source(database: str, rows: int) -> float:
    """The source table of `rows` rows, loaded with COPY, in its own database. Seconds."""
    started = time.perf_counter()
    reset_database(database)
    with psycopg.connect(url(database), autocommit=True) as source:
        source.execute(f"DROP TABLE IF EXISTS {TABLE}")
        source.execute(f"CREATE TABLE {TABLE} ({DDL})")
        copy_sql = f"COPY {TABLE} ({NAMES}) FROM STDIN WITH (FORMAT csv)"
        with source.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for start in range(0, rows, COPY_BATCH):
                copy.write(source_rows(start, min(rows, start + COPY_BATCH)))
        source.execute(f"VACUUM ANALYZE {TABLE}")
    return time.perf_counter() - started


def checksum(database: str, table: str) -> tuple[int, int] | None:
    with psycopg.connect(url(database)) as connection:
        present = connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()
        if present is None or present[0] is None:
            return None
        count, total = connection.execute(CHECKSUM.format(table=table)).fetchone()
        return int(count), int(total)


def checkpoint() -> None:
    """Flush dirty pages now, so that no variant pays for the writes of the one before it."""
    with psycopg.connect(url("postgres"), autocommit=True) as connection:
        connection.execute("CHECKPOINT")


# The DAGs -----------------------------------------------------------------------------------------

HEADER = """
import datetime
from airflow.sdk import DAG

START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
"""

DOGANA_DAG = """
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

CONTRACT = {contract!r}

with DAG("bench_dogana", schedule=None, start_date=START, catchup=False) as dag:
    plan = PlanDeliveryOperator(task_id="plan", contract=CONTRACT, receiver_conn_id={target!r})
    extract = ExtractOperator(
        task_id="extract",
        source_conn_id={source!r},
        contract=CONTRACT,
        output_folder={output!r},
    )
    gate = GateOperator(task_id="gate", receiver_conn_id={target!r})
    publish = PublishOperator(task_id="publish", receiver_conn_id={target!r}, table={table!r})
    plan >> extract >> gate >> publish
"""

GENERIC_DAG = """
from airflow.providers.common.sql.operators.generic_transfer import GenericTransfer

with DAG("bench_generic_transfer", schedule=None, start_date=START, catchup=False) as dag:
    GenericTransfer(
        task_id="transfer",
        source_conn_id={source!r},
        destination_conn_id={target!r},
        sql={sql!r},
        destination_table={table!r},
        preoperator={preoperator!r},
        page_size={page_size!r},
        insert_args={insert_args!r},
    )
"""

BASELINE_DAG = """
from airflow.sdk import task

with DAG("bench_airflow_only", schedule=None, start_date=START, catchup=False) as dag:

    @task(task_id="nothing")
    def nothing():
        return None

    nothing()
"""


def contract_path(home: Path) -> Path:
    from dogana_core.contract import Contract
    from dogana_core.shape import Shape

    contract = Contract(TABLE, ("id",), {"full": Shape.complete()}, types={"id": "int"})
    path = home / f"{TABLE}.contract.json"
    path.write_text(contract.to_json(), encoding="utf-8")
    return path


def write_dags(home: Path) -> dict[str, Path]:
    dags = home / "dags"
    files = {
        "airflow only": BASELINE_DAG,
        "dogana": DOGANA_DAG.format(
            contract=str(contract_path(home)),
            source=SOURCE_CONN,
            target=TARGET_CONN,
            output=(home / "deliveries").as_uri(),
            table=TABLE,
        ),
        "GenericTransfer": GENERIC_DAG.format(
            source=SOURCE_CONN,
            target=TARGET_CONN,
            sql=f"SELECT {NAMES} FROM {TABLE} ORDER BY id",
            table=GENERIC_TABLE,
            preoperator=[
                f"DROP TABLE IF EXISTS {GENERIC_TABLE}",
                f"CREATE TABLE {GENERIC_TABLE} ({DDL})",
            ],
            page_size=PAGE_SIZE,
            insert_args={
                "commit_every": PAGE_SIZE,
                "executemany": True,
                "fast_executemany": True,
                "target_fields": [name for name, _ in COLUMNS],
            },
        ),
    }
    paths = {}
    for variant, body in files.items():
        path = dags / f"bench_{variant.lower().replace(' ', '_')}.py"
        path.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
        paths[variant] = path
    return paths


# One variant, in its own process ----------------------------------------------------------------


class RssSampler:
    """The process's resident memory every 20 ms (Linux's /proc/self/statm), to tell which task
    reached the peak; ru_maxrss gives the peak itself."""

    def __init__(self) -> None:
        import threading

        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        try:
            with open("/proc/self/statm", encoding="ascii") as statm:
                while not self._stop.is_set():
                    statm.seek(0)
                    pages = int(statm.read().split()[1])
                    self.samples.append((time.time(), pages * self._page / 2**20))
                    self._stop.wait(0.02)
        except OSError:
            return

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float | None, end: float | None) -> float | None:
        if start is None or end is None:
            return None
        inside = [mib for at, mib in self.samples if start <= at <= end]
        return max(inside) if inside else None


def run_variant(dag_file: str, result: str, profile: str | None) -> None:
    """Load the DAG file, run it with dag.test(), and write what was measured to `result`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(Path(dag_file).stem, dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    with RssSampler() as sampler:
        started = time.perf_counter()
        run = module.dag.test()
        seconds = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    from airflow.utils.session import create_session

    tasks = {}
    with create_session() as session:
        for ti in run.get_task_instances(session=session):
            start = None if ti.start_date is None else ti.start_date.timestamp()
            end = None if ti.end_date is None else ti.end_date.timestamp()
            tasks[ti.task_id] = {
                "state": str(ti.state),
                "seconds": None if start is None or end is None else end - start,
                "started": start,
                "peak_mib": sampler.peak(start, end),
            }
    measured = {
        "state": str(run.state),
        "seconds": seconds,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "tasks": tasks,
    }
    Path(result).write_text(json.dumps(measured), encoding="utf-8")


def in_child(
    dag_file: Path, home: Path, stem: str, env: dict[str, str], profile: Path | None
) -> dict:
    result = home / f"{stem}.result.json"
    command = [sys.executable, __file__, "--child", str(dag_file), "--result", str(result)]
    if profile is not None:
        command += ["--profile-to", str(profile)]
    log = home / f"{stem}.log"
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not result.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace")[-6000:]
        raise SystemExit(f"{dag_file.name}: the child failed (exit {done.returncode}):\n{tail}")
    measured = json.loads(result.read_text(encoding="utf-8"))
    measured["log"] = str(log)
    return measured


# The run ------------------------------------------------------------------------------------------


def airflow_env(home: Path, source_db: str, target_db: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            f"AIRFLOW_CONN_{SOURCE_CONN.upper()}": url(source_db),
            f"AIRFLOW_CONN_{TARGET_CONN.upper()}": url(target_db),
        }
    )
    root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([root, *paths])
    return env


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"airflow db migrate failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds, the order alternating; medians printed"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile each variant")
    parser.add_argument("--keep", action="store_true", help="keep the temporary AIRFLOW_HOME")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_variant(args.child, args.result, args.profile_to)
        return 0

    rows = args.rows
    home = Path(tempfile.mkdtemp(prefix="dogana-bench-pipeline-"))
    (home / "dags").mkdir()
    run_id = f"{os.getpid()}_{time.time_ns() % 10**6}"
    source_db, target_db = f"{SOURCE_DB}_{run_id}", f"{TARGET_DB}_{run_id}"
    env = airflow_env(home, source_db, target_db)
    keep = True  # the logs stay when the run stops early or a variant fails
    try:
        print(f"{rows:,} rows, PostgreSQL {source_db}.{TABLE} -> {target_db}; AIRFLOW_HOME {home}")
        code = revision()
        print(f"code: {code}; load average before: {load()}")
        generated = prepare_source(source_db, rows)
        print(f"source generated with COPY in {generated:.1f} s")
        migrate(env)
        dags = write_dags(home)
        expected = checksum(source_db, TABLE)
        assert expected is not None
        runs: dict[str, list[dict]] = {variant: [] for variant in dags}
        for round_ in range(args.repeat):
            reset_database(target_db)
            moving = ["dogana", "GenericTransfer"]
            order = ["airflow only", *(moving if round_ % 2 == 0 else reversed(moving))]
            for variant in order:
                checkpoint()
                stem = f"{dags[variant].stem}.{round_}"
                profile = home / f"{stem}.prof" if args.profile else None
                found = in_child(dags[variant], home, stem, env, profile)
                if profile is not None:
                    found["profile"] = str(profile)
                if variant in TARGETS:
                    found["rows_found"] = checksum(target_db, TARGETS[variant])
                runs[variant].append(found)
        print(f"load average after: {load()}")
        if revision() != code:
            print(f"CODE CHANGED DURING THE RUN, now {revision()}: run again for one version")
        keep = not report(rows, expected, runs)
    finally:
        if keep or args.keep or args.profile:
            print(f"kept {home} and the databases {source_db}, {target_db}")
        else:
            shutil.rmtree(home, ignore_errors=True)
            for database in (source_db, target_db):
                drop_database(database)
    return 0


TARGETS = {"dogana": TABLE, "GenericTransfer": GENERIC_TABLE}


def revision() -> str:
    """The commit the operators ran at, and whether the working tree changed them."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            [
                "git",
                "-C",
                str(root),
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
        return f"{root}, not a git checkout"
    files = [line for line in changed if line.strip()]
    return head + (f" with {len(files)} changed files in the packages" if files else "")


def load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


def round_text(run: dict, expected: tuple[int, int]) -> str:
    text = f"{run['seconds']:.2f} s"
    if run["state"] != "success":
        text += f" {run['state']} (log {run['log']})"
    if run.get("rows_found", expected) != expected:
        text += f" rows {run['rows_found']} != {expected}"
    return text


def median_run(found: list[dict]) -> dict:
    return sorted(found, key=lambda run: run["seconds"])[(len(found) - 1) // 2]


def report(rows: int, expected: tuple[int, int], runs: dict[str, list[dict]]) -> bool:
    """Print the table; whether every run succeeded and moved the source's rows."""
    repeated = len(runs["dogana"]) > 1
    print()
    if repeated:
        print(f"median of {len(runs['dogana'])} rounds, each round in its own processes")
    print(f"{'variant':<17} {'state':<8} {'seconds':>8} {'rows/s':>10} {'peak RSS MB':>12}  rows")
    chosen = {variant: median_run(found) for variant, found in runs.items()}
    for variant, found in chosen.items():
        seconds = found["seconds"]
        if variant in TARGETS:
            wrong = [run["rows_found"] for run in runs[variant] if run["rows_found"] != expected]
            check = "same as source" if not wrong else f"DIFFERENT: {wrong[0]} != {expected}"
            if repeated and not wrong:
                check += " in every round"
            rate = f"{rows / seconds:>10,.0f}"
        else:
            check, rate = "(one empty task: Airflow's own cost)", f"{'':>10}"
        print(
            f"{variant:<17} {found['state']:<8} {seconds:>8.2f} {rate} "
            f"{found['peak_mib']:>12.0f}  {check}"
        )
    blank = f"{'':<8} {'':>8} {'':>10} {'':>12}"
    print(f"{'source':<17} {blank}  count {expected[0]:,}, checksum {expected[1]}")
    if repeated:
        print()
        for variant, found in runs.items():
            print(f"{variant} rounds: " + ", ".join(round_text(run, expected) for run in found))
        ratios = [
            generic["seconds"] / dogana["seconds"]
            for dogana, generic in zip(runs["dogana"], runs["GenericTransfer"], strict=True)
        ]
        print("GenericTransfer / dogana by round: " + ", ".join(f"{r:.2f}x" for r in ratios))
    print()
    for variant in TARGETS:
        tasks = sorted(chosen[variant]["tasks"].items(), key=lambda item: item[1]["started"] or 0)
        timed = ", ".join(
            f"{task} {info['seconds']:.2f} s / {info['peak_mib'] or 0:.0f} MB"
            for task, info in tasks
        )
        print(f"{variant} per task (seconds start to end / peak RSS sampled): {timed}")
    dogana, generic = chosen["dogana"], chosen["GenericTransfer"]
    ratio = generic["seconds"] / dogana["seconds"]
    fixed = chosen["airflow only"]["seconds"]
    memory = generic["peak_mib"] / dogana["peak_mib"]
    net = ""
    if min(dogana["seconds"], generic["seconds"]) > fixed:
        net_ratio = (generic["seconds"] - fixed) / (dogana["seconds"] - fixed)
        net = f" ({net_ratio:.2f}x net of the airflow-only run)"
    print(f"GenericTransfer / dogana: time {ratio:.2f}x{net}, peak RSS {memory:.2f}x")
    unsound = [
        f"{variant} round {index + 1}: {round_text(run, expected)}"
        for variant, found in runs.items()
        for index, run in enumerate(found)
        if run["state"] != "success" or run.get("rows_found", expected) != expected
    ]
    met = not unsound and ratio > 1
    print(
        "target (faster than GenericTransfer, with the proofs): "
        + ("met" if met else "NOT met")
        + ("" if not unsound else f" (not every run succeeded: {'; '.join(unsound)})")
    )
    for variant, found in runs.items():
        for run in found:
            if "profile" in run:
                print(f"profile {variant}: {run['profile']}")
    return not unsound


if __name__ == "__main__":
    sys.exit(main())
