"""Many tables from one PostgreSQL source: the time per table spent outside the rows themselves.

For each count N (10, 50 and 100 by default) the source database dogana_bench_source_<run>
gets N tables of three rows, and a folder gets N ODCS contract files; one DAG run (dag.test(),
in a child process with its own AIRFLOW_HOME) maps delivery_task_group over
contracts_in_folder(folder) into the empty database dogana_bench_target_<run>. With three rows
a table, what a table costs is what dogana does around its rows: reading and validating its
contract file, registering and planning, the snapshot and the file, the gate's checks, the
publication and its Asset event, and the XCom between the tasks. The child then checks that
each table's Asset event names that table alone, reads the folder once more, and parses it as
one DAG per file (contract_dags, what the dag-processor does).

Printed per N: the run's seconds per table and its growth per table added, each step's mean
task seconds, the read and the parse per file; then the ratio of each at the largest N to the
smallest, which must stay near 1.00 (a table costs the same among 100 as among 10; the run's
own ratio falls, its fixed start spread over more tables). Not a timed test: it prints, it
never fails on time; it fails when a table was not delivered, or not with its own event.
tests/bench/test_many_tables.py runs it at 2 and 12 tables, the mechanism; the figures are this
script's own run at 10, 50 and 100.

    PYTHONPATH=. .venv/bin/python bench/many_tables.py                  # 10, 50, 100 tables
    PYTHONPATH=. .venv/bin/python bench/many_tables.py --tables 4 8     # quicker
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.pipeline import Postgres, airflow_env, migrate

ROWS = 3
STEPS = ("contracts_in_folder", "plan", "extract", "gate", "publish")


def contract(table: str) -> dict[str, Any]:
    """A keyed table with soft deletes, read whole or by its changes, as an ODCS v3 document."""
    return {
        "apiVersion": "v3.0.2",
        "kind": "DataContract",
        "id": table,
        "version": "1.0.0",
        "status": "active",
        "schema": [
            {
                "name": table,
                "properties": [
                    {"name": "id", "logicalType": "integer", "primaryKey": True},
                    {"name": "name", "logicalType": "string"},
                    {"name": "updated_at", "logicalType": "timestamp"},
                    {"name": "deleted", "logicalType": "boolean"},
                ],
                "customProperties": [
                    {
                        "property": "doganaShapes",
                        "value": {
                            "full": {"read": "complete", "cost": 10},
                            "changes": {"read": "changes", "tombstones": True},
                        },
                    },
                    {"property": "doganaCursorColumn", "value": "updated_at"},
                    {"property": "doganaDeletedColumn", "value": "deleted"},
                ],
            }
        ],
    }


class ManyTables(Postgres):
    """dogana_bench_source_<run>: count tables of ROWS rows; an empty target."""

    def generate(self, count: int) -> None:
        source = self._db("source")
        self._admin(f"DROP DATABASE IF EXISTS {source} WITH (FORCE)")
        self._admin(f"CREATE DATABASE {source}")
        with psycopg.connect(self.source_url(), autocommit=True) as connection:
            for table in tables(count):
                connection.execute(
                    f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, name TEXT, "
                    "updated_at TIMESTAMPTZ NOT NULL, deleted BOOLEAN NOT NULL)"
                )
                connection.execute(
                    f"INSERT INTO {table} SELECT i, 'row ' || i, now(), false "
                    f"FROM generate_series(1, {ROWS}) AS i"
                )
        self.reset_target()


def tables(count: int) -> list[str]:
    return [f"t{number:03d}" for number in range(count)]


def write_contracts(count: int, folder: Path) -> None:
    folder.mkdir(parents=True)
    for table in tables(count):
        text = yaml.safe_dump(contract(table), sort_keys=False)
        (folder / f"{table}.odcs.yaml").write_text(text, encoding="utf-8")


def write_dags(home: Path, folder: Path) -> tuple[Path, Path]:
    """The mapped DAG the run measures, and the DAG file of one DAG per contract file."""
    dags = home / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    mapped = dags / "many_tables.py"
    mapped.write_text(
        textwrap.dedent(
            f'''
            """Every contract file of the folder, one mapped delivery per table (Airflow DAG)."""
            import datetime
            from airflow.sdk import DAG
            from dogana_provider.contract_files import contracts_in_folder
            from dogana_provider.task_groups.delivery import delivery_task_group

            with DAG(
                "many_tables",
                schedule=None,
                start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
            ) as dag:
                delivery_task_group.partial(
                    source_conn_id="bench_source", receiver_conn_id="bench_target"
                ).expand(contract=contracts_in_folder({str(folder)!r}))
            '''
        ),
        encoding="utf-8",
    )
    per_file = home / "per_file" / "per_file.py"  # outside the DAGs folder: dag.test() skips it
    per_file.parent.mkdir(exist_ok=True)
    per_file.write_text(
        "# An Airflow DAG file: one dag per contract file.\n"
        "from dogana_provider.contract_files import contract_dags\n"
        f"contract_dags({str(folder)!r}, source_conn_id='bench_source')\n",
        encoding="utf-8",
    )
    return mapped, per_file


def run_child(mapped: str, per_file: str, folder: str, result: str) -> None:
    """In the child: the mapped DAG's run, each step's task seconds, each table's own Asset
    event, the folder read, and the folder parsed as one DAG per file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("many_tables", mapped)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    run = module.dag.test()
    seconds = time.perf_counter() - started

    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    steps: dict[str, float] = defaultdict(float)
    states: dict[str, int] = defaultdict(int)
    own_events = 0  # tables whose one Asset event names that table alone
    with create_session() as session:
        for uri, extra in session.execute(
            select(AssetModel.uri, AssetEvent.extra).join(
                AssetModel, AssetModel.id == AssetEvent.asset_id
            )
        ):
            own_events += extra.get("tables") == [uri.rsplit("/", 1)[-1]]
        for ti in run.get_task_instances(session=session):
            states[str(ti.state)] += 1
            if ti.start_date is not None and ti.end_date is not None:
                step = ti.task_id.rsplit(".", 1)[-1]
                steps[step] += (ti.end_date - ti.start_date).total_seconds()
    from dogana_provider.contract_files import read_contract_folder

    started = time.perf_counter()
    read_contract_folder(folder)
    read = time.perf_counter() - started
    started = time.perf_counter()
    bag = DagBag(dag_folder=per_file)
    parse = time.perf_counter() - started
    measured = {
        "state": str(run.state),
        "seconds": seconds,
        "steps": steps,
        "states": states,
        "read": read,
        "parse": parse,
        "own_events": own_events,
        "parsed_dags": len(bag.dag_ids),
        "import_errors": len(bag.import_errors),
    }
    Path(result).write_text(json.dumps(measured), encoding="utf-8")


def measure(count: int, work: Path) -> dict[str, Any]:
    home = work / f"home_{count}"
    folder = work / f"contracts_{count}"
    database = ManyTables(uuid.uuid4().hex[:8], home)
    try:
        database.generate(count)
        write_contracts(count, folder)
        mapped, per_file = write_dags(home, folder)
        env = airflow_env(home, database)
        env["AIRFLOW__DOGANA__DELIVERY_FOLDER"] = (home / "deliveries").as_uri()
        migrate(env)
        result = home / "result.json"
        log = home / "child.log"
        command = [sys.executable, __file__, "--child", str(mapped), str(per_file), str(folder)]
        command.append(str(result))
        with log.open("w", encoding="utf-8") as output:
            done = subprocess.run(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        if done.returncode != 0 or not result.is_file():
            tail = log.read_text(encoding="utf-8", errors="replace")[-6000:]
            raise SystemExit(f"{count} tables: the child failed (exit {done.returncode}):\n{tail}")
        measured: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        counts = [
            database.query(database.target_url(), f"SELECT count(*) FROM {table}")
            for table in tables(count)
        ]
        measured["published"] = sum(1 for found in counts if found == [(ROWS,)])
        return measured
    finally:
        database.drop()


def report(results: dict[int, dict[str, Any]]) -> bool:
    """One line per count, then the ratios of the largest count to the smallest."""
    counts = sorted(results)
    names = ("run", "marginal", *STEPS[1:], "read", "parse")
    print(f"seconds per table (each table {ROWS} rows)")
    print(
        "  run: the DAG run / tables; marginal: its growth / the tables added since the count "
        "before;\n  plan...publish: mean task seconds; read: reading and validating a contract "
        "file;\n  parse: the dag-processor's parse of one DAG per file"
    )
    print(f"{'tables':>6}" + "".join(f"  {name:>9}" for name in names))
    ok = True
    per: dict[int, dict[str, float]] = {}
    before: int | None = None
    for count in counts:
        found = results[count]
        per[count] = {
            "run": found["seconds"] / count,
            **{step: found["steps"].get(step, 0.0) / count for step in STEPS[1:]},
            "read": found["read"] / count,
            "parse": found["parse"] / count,
        }
        if before is not None:
            grown = found["seconds"] - results[before]["seconds"]
            per[count]["marginal"] = grown / (count - before)
        good = (
            found["state"] == "success"
            and found["published"] == count
            and found["own_events"] == count
            and found["parsed_dags"] == count
            and found["import_errors"] == 0
        )
        ok = ok and good
        print(
            f"{count:>6}"
            + "".join(
                f"  {per[count][name]:>9.4f}" if name in per[count] else f"  {'':>9}"
                for name in names
            )
            + ("" if good else f"  FAILED {found}")
        )
        before = count
    low, high = counts[0], counts[-1]
    marginals = [count for count in counts if "marginal" in per[count]]
    ratios = [
        f"{name} {per[high][name] / per[low][name]:.2f}"
        for name in names
        if name != "marginal" and per[low][name] > 0
    ]
    if len(marginals) > 1:
        first, last = marginals[0], marginals[-1]
        ratios.insert(1, f"marginal {per[last]['marginal'] / per[first]['marginal']:.2f}")
    print(f"ratio {high} tables / {low} tables (flat is 1.00):")
    print("  " + "  ".join(ratios))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--child", nargs=4, metavar=("MAPPED", "PER_FILE", "FOLDER", "RESULT"))
    args = parser.parse_args(argv)
    if args.child:
        run_child(*args.child)
        return 0
    work = Path(tempfile.mkdtemp(prefix="dogana-bench-many-"))
    try:
        results = {count: measure(count, work) for count in args.tables}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if report(results) else 1


if __name__ == "__main__":
    sys.exit(main())
