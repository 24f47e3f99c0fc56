"""One DeliverOperator over a batch of tables, its execute() timed outside a scheduler.

What a task of bench/many_tables.py's "batches" form does once its process has started: the
same tables (TABLES of SCHEDULER_ROWS rows, PostgreSQL to PostgreSQL, the same contracts) are
delivered by one DeliverOperator(contracts=[...]) in a DAG run by dag.test(), in a child process
with its own AIRFLOW_HOME, into a target database emptied before each run. Printed per run: the
execute()'s seconds per table, the process's CPU per table (the rest of the wall time is the
databases', on the same cores), and the garbage collector's time per table; with --profile, the
last run's execute() under cProfile, its statistics written to that file. Not a timed test.

    PYTHONPATH=. .venv/bin/python bench/batch_execute.py                 # 10 tables, 3 runs
    PYTHONPATH=. .venv/bin/python bench/batch_execute.py --profile /tmp/batch.prof
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.many_tables import SCHEDULER_ROWS, ManyTables, contract, tables
from bench.pipeline import airflow_env, migrate

TABLES = 10


def run_child(dag_file: str, result: str, profile: str) -> None:
    """In the child: the DAG's run, its DeliverOperator's execute() timed."""
    import importlib.util

    from dogana_provider.operators.deliver import DeliverOperator

    measured: dict[str, Any] = {}
    execute = DeliverOperator.execute
    collecting = {"since": 0.0, "seconds": 0.0}

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collecting["since"] = time.perf_counter()
        else:
            collecting["seconds"] += time.perf_counter() - collecting["since"]

    def timed(self: DeliverOperator, context: Any) -> Any:
        profiler = cProfile.Profile() if profile else None
        collecting["seconds"] = 0.0
        gc.callbacks.append(collected)
        started, cpu = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        try:
            return execute(self, context)
        finally:
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(profile)
            measured["seconds"] = time.perf_counter() - started
            measured["cpu"] = time.process_time() - cpu
            gc.callbacks.remove(collected)
            measured["gc"] = collecting["seconds"]

    DeliverOperator.execute = timed  # type: ignore[method-assign]
    spec = importlib.util.spec_from_file_location("batch_execute_dag", dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    measured["state"] = str(module.dag.test().state)
    Path(result).write_text(json.dumps(measured), encoding="utf-8")


def dag_file(count: int) -> str:
    from dogana_core.odcs import contracts_of_odcs

    batch = [contracts_of_odcs(contract(table))[0].to_dict() for table in tables(count)]
    return textwrap.dedent(
        f'''
        """{count} tables delivered by one DeliverOperator (Airflow DAG)."""
        import datetime
        from airflow.sdk import DAG
        from dogana_provider.operators.deliver import DeliverOperator

        with DAG("batch_execute", schedule=None,
                 start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)) as dag:
            DeliverOperator(task_id="deliver", source_conn_id="bench_source",
                            receiver_conn_id="bench_target", contracts={batch!r})
        '''
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=TABLES)
    parser.add_argument("--rows", type=int, default=SCHEDULER_ROWS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", default="", help="cProfile the last run's execute() here")
    parser.add_argument("--child", nargs=3, metavar=("DAG_FILE", "RESULT", "PROFILE"))
    args = parser.parse_args(argv)
    if args.child:
        run_child(*args.child)
        return 0
    work = Path(tempfile.mkdtemp(prefix="dogana-bench-batch-"))
    database = ManyTables(uuid.uuid4().hex[:8], work)
    try:
        database.generate(args.tables, args.rows)
        (work / "dags").mkdir()
        dag = work / "dags" / "batch_execute.py"
        dag.write_text(dag_file(args.tables), encoding="utf-8")
        env = airflow_env(work, database)
        env["AIRFLOW__DOGANA__DELIVERY_FOLDER"] = (work / "deliveries").as_uri()
        migrate(env)
        runs = []
        for number in range(args.runs):
            database.reset_target()
            result = work / "result.json"
            profile = args.profile if number == args.runs - 1 else ""
            command = [sys.executable, __file__, "--child", str(dag), str(result), profile]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-3000:])
                return 1
            run = json.loads(result.read_text(encoding="utf-8"))
            runs.append(run)
            print(
                f"run {number}: {run['state']}, {1000 * run['seconds'] / args.tables:.0f} ms a "
                f"table, CPU {1000 * run['cpu'] / args.tables:.0f} ms, garbage collection "
                f"{1000 * run['gc'] / args.tables:.0f} ms"
                + (f" (profiled: {profile})" if profile else ""),
                flush=True,
            )
        timed = runs[:-1] if args.profile and len(runs) > 1 else runs
        print(
            f"{args.tables} tables of {args.rows} rows, median of {len(timed)}: "
            f"{1000 * statistics.median(r['seconds'] for r in timed) / args.tables:.0f} ms a "
            f"table, CPU {1000 * statistics.median(r['cpu'] for r in timed) / args.tables:.0f} "
            f"ms; load average {os.getloadavg()[0]:.1f} (2 cores)"
        )
        return 0 if all(r["state"] == "success" for r in runs) else 1
    finally:
        database.drop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
