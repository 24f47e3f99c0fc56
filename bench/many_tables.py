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

With --scheduler, the same tables of SCHEDULER_ROWS (10,000) rows each go through a real
deployment instead (tests/deployment/deployment.py: LocalExecutor, the scheduler, DAG processor,
triggerer and API server as processes, a PostgreSQL metadata database). For each count, one DAG
per variant maps its delivery over the folder's contracts; the run is triggered through /api/v2
and timed from the trigger to the last publication's end (the publish task instances'
end_date). Beside it, in the same run and into targets of their own, Sling's `replication` of
the same tables (full-refresh, its own binary from PyPI's sling-linux-amd64, in
~/.cache/dogana-bench/sling) and dlt's sql_database source (pyarrow backend, replace), each timed
as one process from its start to its exit, after the deployment has stopped. dogana's forms:
"four tasks" (delivery_task_group mapped, the default), "one task" (DeliverOperator mapped, a
task a table), "batches" (DeliverOperator over batches of --batch tables) and "per core"
(DeliverOperator over contracts_in_folder(folder, tasks=--tasks): as many batches as the
machine's cores, made by the list's own task; "N batches" for each of several --tasks). Printed
per count: each one's seconds, its seconds per table, its ratio to Sling and dlt, the overhead
per table over Sling, and where a task's time goes (to queued, to start, run).

    PYTHONPATH=. .venv/bin/python bench/many_tables.py --scheduler --tables 10 100
    PYTHONPATH=. .venv/bin/python bench/many_tables.py --scheduler --variants batches --batch 25
    PYTHONPATH=. .venv/bin/python bench/many_tables.py --scheduler --tables 100 \
        --variants batches "per core"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "deployment"))
from bench.pipeline import (
    DLT_PACKAGES,
    PG_SERVER,
    Postgres,
    airflow_env,
    clean_env,
    dlt_environment,
    migrate,
)

ROWS = 3
SCHEDULER_ROWS = 10_000
SLING_VENV = Path.home() / ".cache" / "dogana-bench" / "sling"
# The Go binary ships in its own wheel; sling's Python package alone downloads it at first use.
SLING_PACKAGES = ["sling==1.4.11", "sling-linux-amd64==1.4.11"]
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

    def generate(self, count: int, rows: int = ROWS) -> None:
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
                    f"FROM generate_series(1, {rows}) AS i"
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
        # Each count's home starts from the same empty metadata database: migrated once, for the
        # first, then copied (no process has it open).
        migrated = work / "airflow.db"
        if migrated.exists():
            shutil.copy(migrated, home / "airflow.db")
        else:
            migrate(env)
            shutil.copy(home / "airflow.db", migrated)
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


# Under a real scheduler ---------------------------------------------------------------------------

# Each variant's DAG: the contracts of {folder} into {receiver}, as a user writes it.
VARIANTS = {
    "four tasks": """
        delivery_task_group.partial(
            source_conn_id="bench_source", receiver_conn_id={receiver!r}
        ).expand(contract=contracts_in_folder({folder!r}))
    """,
    "one task": """
        DeliverOperator.partial(
            task_id="deliver", source_conn_id="bench_source", receiver_conn_id={receiver!r},
            outlets=[dogana_alias({receiver!r})],
        ).expand(contract=contracts_in_folder({folder!r}))
    """,
    "batches": """
        DeliverOperator.partial(
            task_id="deliver", source_conn_id="bench_source", receiver_conn_id={receiver!r},
            outlets=[dogana_alias({receiver!r})],
        ).expand(contracts=batches(contracts_in_folder({folder!r}), {batch}))
    """,
    "per core": """
        DeliverOperator.partial(
            task_id="deliver", source_conn_id="bench_source", receiver_conn_id={receiver!r},
            outlets=[dogana_alias({receiver!r})],
        ).expand(contracts=contracts_in_folder({folder!r}, tasks={tasks}))
    """,
}
WARM_UP = "many_tables_warm_up"  # a run of no table, before the runs measured
BATCH = 10  # tables a task in the "batches" variant, by default
TASKS = os.cpu_count() or 2  # batches in the "per core" variant, by default: the cores here


def dag_file(dag_id: str, body: str) -> str:
    return (
        f'"""The contract files of a folder, one mapped delivery each (Airflow DAG {dag_id})."""\n'
        "import datetime\n"
        "from airflow.sdk import DAG\n"
        "from dogana_provider.contract_files import contracts_in_folder\n"
        "from dogana_provider.operators.deliver import DeliverOperator, batches\n"
        "from dogana_provider.operators.publish import dogana_alias\n"
        "from dogana_provider.task_groups.delivery import delivery_task_group\n\n"
        f"with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2026, 1, 1, "
        "tzinfo=datetime.timezone.utc)):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "    ")
        + "\n"
    )


def dag_id_of(variant: str, count: int) -> str:
    return f"many_tables_{variant.replace(' ', '_')}_{count}"


class Scheduled(ManyTables):
    """One source of the largest count's tables; an empty target per tool and count."""

    def target(self, name: str) -> str:
        database = self._db(f"target_{name}")
        self._admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        self._admin(f"CREATE DATABASE {database}")
        self.targets.append(database)
        return f"{PG_SERVER}/{database}"

    def drop(self) -> None:
        super().drop()
        for database in self.targets:
            self._admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")

    def published(self, url: str, count: int, rows: int, schema: str = "public") -> int:
        """The tables of the count holding their rows in url's schema."""
        found = self.query(
            url,
            "SELECT relname, reltuples FROM pg_class JOIN pg_namespace n ON n.oid = relnamespace "
            f"WHERE nspname = '{schema}' AND relkind = 'r'",
        )
        names = {name for name, _ in found}
        return sum(
            1
            for table in tables(count)
            if table in names
            and self.query(url, f'SELECT count(*) FROM "{schema}"."{table}"') == [(rows,)]
        )

    targets: list[str]


def forms(variants: list[str], tasks: list[int]) -> dict[str, tuple[str, int]]:
    """Each form measured, by its label: its variant and its number of batches. "per core" at
    several --tasks is one form each, labelled by it ("2 batches", "4 batches")."""
    found: dict[str, tuple[str, int]] = {}
    for variant in variants:
        if variant == "per core" and len(tasks) > 1:
            found.update({f"{number} batches": (variant, number) for number in tasks})
        else:
            found[variant] = (variant, tasks[0])
    return found


def scheduled(
    counts: list[int],
    rows: int,
    parallelism: int,
    batch: int,
    tasks: list[int],
    variants: list[str],
) -> bool:
    from deployment import Deployment

    labelled = forms(variants, tasks)
    variants = list(labelled)

    work = Path(tempfile.mkdtemp(prefix="dogana-bench-scheduled-"))
    database = Scheduled(uuid.uuid4().hex[:8], work)
    database.targets = []
    results: dict[int, dict[str, Any]] = {}
    try:
        database.generate(max(counts), rows)
        with psycopg.connect(database.source_url(), autocommit=True) as connection:
            connection.execute("VACUUM ANALYZE")  # as a source long loaded is
        environment = {
            "AIRFLOW_CONN_BENCH_SOURCE": database.source_url(),
            "AIRFLOW__DOGANA__DELIVERY_FOLDER": (work / "deliveries").as_uri(),
            # The deployment's processes run elsewhere: a relative PYTHONPATH (".") would give
            # them the provider installed in the virtualenv, not this tree's.
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]
            ).rstrip(os.pathsep),
        }
        sources = work / "dag_files"
        sources.mkdir()
        for count in counts:
            folder = work / f"contracts_{count}"
            write_contracts(count, folder)
            for variant in variants:
                form, number = labelled[variant]
                dag_id = dag_id_of(variant, count)
                receiver = f"bench_{dag_id}"
                environment[f"AIRFLOW_CONN_{receiver.upper()}"] = database.target(dag_id)
                filled = VARIANTS[form].format(
                    receiver=receiver, folder=str(folder), batch=batch, tasks=number
                )
                text = dag_file(dag_id, filled)
                (sources / f"{dag_id}.py").write_text(text, encoding="utf-8")
        warm_up = dag_file(
            WARM_UP,
            VARIANTS["batches"].format(
                receiver="bench_warm_up", folder=str(work / "contracts_warm_up"), batch=batch
            ),
        )
        write_contracts(0, work / "contracts_warm_up")
        (sources / f"{WARM_UP}.py").write_text(warm_up, encoding="utf-8")
        started = time.perf_counter()
        with Deployment(
            f"{PG_SERVER}/postgres",
            dags=sorted(sources.iterdir()),
            environment=environment,
            parallelism=parallelism,
        ) as deployment:
            print(f"deployment started in {time.perf_counter() - started:.0f} s", flush=True)
            client = deployment.client()
            dag_ids = [dag_id_of(v, c) for c in counts for v in variants]
            client.wait_parsed([*dag_ids, WARM_UP], timeout=600)
            for dag_id in [*dag_ids, WARM_UP]:
                client.unpause(dag_id)
            # Untimed: a deployment's first task compiles the provider's modules to bytecode
            # (about 20 s here), which a deployment that has run before never pays again.
            client.wait(client.trigger(WARM_UP), timeout=600)
            for count in counts:
                found: dict[str, Any] = results.setdefault(count, {"load": []})
                for variant in variants:
                    dag_id = dag_id_of(variant, count)
                    found["load"].append(os.getloadavg()[0])
                    found[variant] = run_dag(client, dag_id, count)
                    found[variant]["published"] = database.published(
                        environment[f"AIRFLOW_CONN_BENCH_{dag_id.upper()}"], count, rows
                    )
                    print(
                        f"{count} tables, {variant}: {found[variant]['seconds']:.1f} s", flush=True
                    )
        # Sling and dlt once the deployment has stopped: its processes would take CPU and
        # connections (PostgreSQL's 100) from them that a team running them instead would not.
        for count in counts:
            found = results[count]
            found["load"].append(os.getloadavg()[0])
            found["sling"] = sling_run(database, count, rows, work)
            found["dlt"] = dlt_many(database, count, rows, work)
            found["load"].append(os.getloadavg()[0])
    finally:
        database.drop()
        shutil.rmtree(work, ignore_errors=True)
    return scheduled_report(results, rows, parallelism, batch, tasks, variants)


def instant(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).timestamp()


def run_dag(client: Any, dag_id: str, count: int) -> dict[str, Any]:
    """Trigger dag_id through /api/v2 and wait for it; its seconds from the trigger to the end
    of its last publication, and each step's mean wait and run."""
    triggered = datetime.now(UTC).timestamp()
    run = client.trigger(dag_id)
    state = client.wait(run, timeout=3600)["state"]
    instances = client.task_instances(run)
    ends: dict[tuple[int, str], float] = {}
    for ti in instances:
        if ti["end_date"] is not None:
            ends[(ti["map_index"], ti["task_id"].rsplit(".", 1)[-1])] = instant(ti["end_date"]) or 0
    last = max(
        (end for (_, step), end in ends.items() if step in ("publish", "deliver")), default=0
    )
    steps: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counted: dict[str, int] = defaultdict(int)
    listed = ends.get((-1, "contracts_in_folder"))
    # The step each step waits for: the one before it in the same map index.
    previous = {"plan": "contracts_in_folder", "extract": "plan", "gate": "extract"}
    previous.update({"publish": "gate", "batches": "contracts_in_folder"})
    for ti in instances:
        step = ti["task_id"].rsplit(".", 1)[-1]
        queued, start, end = (instant(ti[k]) for k in ("queued_when", "start_date", "end_date"))
        if queued is None or start is None or end is None:
            continue
        counted[step] += 1
        steps[step]["wait"] += start - queued
        steps[step]["run"] += end - start
        if step == "deliver":
            before = ends.get((-1, "batches"), listed)
        elif step in ("plan", "batches"):
            before = listed
        elif step in previous:
            before = ends.get((ti["map_index"], previous[step]))
        else:
            before = triggered
        if before is not None:
            steps[step]["scheduler"] += queued - before
    means = {
        step: {k: v / counted[step] for k, v in found.items()} for step, found in steps.items()
    }
    return {"state": state, "seconds": last - triggered, "steps": means, "tasks": len(instances)}


def sling_binary() -> tuple[Path | None, str | None]:
    """Sling's binary from its wheel, in an environment the bench makes; why not, where not."""
    python = SLING_VENV / "bin" / "python"
    make = "" if python.exists() else f"{sys.executable} -m venv {SLING_VENV} && "
    made = subprocess.run(
        f"{make}{python} -m pip install -q --disable-pip-version-check "
        + " ".join(f"'{package}'" for package in SLING_PACKAGES),
        shell=True,
        capture_output=True,
        text=True,
    )
    found = sorted(SLING_VENV.glob("lib/python*/site-packages/sling_linux_amd64/bin/sling-*"))
    if made.returncode != 0 or not found:
        return None, f"its binary could not be installed: {made.stderr[-300:]}"
    return found[0], None


def sling_run(database: Scheduled, count: int, rows: int, work: Path) -> dict[str, Any]:
    """Sling's replication of the count's tables, full-refresh, into a target of its own."""
    binary, failed = sling_binary()
    if binary is None:
        return {"skipped": failed}
    target = database.target(f"sling_{count}")
    replication = {
        "source": "BENCH_SOURCE",
        "target": "BENCH_TARGET",
        "defaults": {"mode": "full-refresh", "object": "public.{stream_table}"},
        "streams": {f"public.{table}": None for table in tables(count)},
    }
    path = work / f"sling_{count}.yaml"
    path.write_text(yaml.safe_dump(replication), encoding="utf-8")
    env = {
        **clean_env(work),
        "SLING_HOME_DIR": str(work / "sling_home"),
        "SLING_DISABLE_TELEMETRY": "true",
        "BENCH_SOURCE": f"{database.source_url()}?sslmode=disable",
        "BENCH_TARGET": f"{target}?sslmode=disable",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [str(binary), "run", "-r", str(path)], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return {"skipped": f"it failed: {(done.stdout + done.stderr)[-400:]}"}
    return {"seconds": seconds, "published": database.published(target, count, rows)}


def dlt_many(database: Scheduled, count: int, rows: int, work: Path) -> dict[str, Any]:
    """dlt's sql_database source of the count's tables (pyarrow backend, replace)."""
    python, failed = dlt_environment(DLT_PACKAGES)
    if failed:
        return {"skipped": failed}
    target = database.target(f"dlt_{count}").replace("postgres@", "postgres:unused@")
    script = work / f"dlt_{count}.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import dlt
            from dlt.sources.sql_database import sql_database

            source = sql_database(credentials={database.source_url()!r}, schema="public",
                                  table_names={tables(count)!r}, backend="pyarrow")
            pipeline = dlt.pipeline(pipeline_name="many", pipelines_dir={str(work / "dlt")!r},
                destination=dlt.destinations.postgres({target!r}), dataset_name="dlt_bench")
            pipeline.run(source, write_disposition="replace")
            """
        ),
        encoding="utf-8",
    )
    # By default dlt reads its resources round-robin, a connection open for each: 100 tables
    # exhaust PostgreSQL's 100 connections. One table after another, as Sling reads them.
    environment = {**clean_env(work), "EXTRACT__NEXT_ITEM_MODE": "fifo"}
    started = time.perf_counter()
    done = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, env=environment
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return {"skipped": f"it failed: {done.stderr[-400:]}"}
    return {"seconds": seconds, "published": database.published(target, count, rows, "dlt_bench")}


def scheduled_report(
    results: dict[int, dict[str, Any]],
    rows: int,
    parallelism: int,
    batch: int,
    tasks: list[int],
    variants: list[str],
) -> bool:
    print(
        f"\nunder a real scheduler: LocalExecutor, [core] parallelism {parallelism}, "
        f"each table {rows:,} rows, PostgreSQL to PostgreSQL;\n  four tasks: delivery_task_group "
        "mapped over the contracts; one task: DeliverOperator mapped over them; batches: "
        f"DeliverOperator over batches of {batch};\n  per core (N batches): DeliverOperator "
        f"over contracts_in_folder(..., tasks=N), N {'/'.join(map(str, tasks))} batches made "
        "by the list's task"
    )
    tools = [*variants, "sling", "dlt"]
    print(f"{'tables':>6}  {'tool':<12}{'seconds':>9}{'per table':>11}{'x Sling':>9}{'x dlt':>7}")
    ok = True
    for count, found in sorted(results.items()):
        sling = found["sling"].get("seconds")
        dlt = found["dlt"].get("seconds")
        for tool in tools:
            measured = found[tool]
            if "skipped" in measured:
                print(f"{count:>6}  {tool:<12}skipped: {measured['skipped']}")
                continue
            seconds = measured["seconds"]
            good = measured["published"] == count and measured.get("state", "success") == "success"
            ok = ok and good
            print(
                f"{count:>6}  {tool:<12}{seconds:>9.1f}{seconds / count:>11.2f}"
                + (f"{seconds / sling:>9.2f}" if sling else f"{'':>9}")
                + (f"{seconds / dlt:>7.2f}" if dlt else f"{'':>7}")
                + ("" if good else f"  FAILED: {measured}")
            )
        if sling:
            for variant in variants:
                if "seconds" in found[variant]:
                    over = (found[variant]["seconds"] - sling) / count
                    print(f"{'':>6}  overhead per table over Sling, {variant}: {over:.2f} s")
        loads = found["load"]
        print(f"{'':>6}  load average {min(loads):.1f} to {max(loads):.1f} (2 cores)")
    print("where a task's time goes (mean seconds per task instance):")
    print(
        "  to queued: from the step before it ended (or the list or batches were made) to this "
        "task queued,\n  the scheduler's loop and the wait for a free slot of [core] "
        "parallelism; to start: queued to\n  started, the executor starting its process; run: "
        "started to ended, the DAG file's parse and execute()"
    )
    print(f"{'tables':>6}  {'variant':<12}{'step':<22}{'to queued':>10}{'to start':>10}{'run':>8}")
    for count, found in sorted(results.items()):
        for variant in variants:
            for step, means in found[variant].get("steps", {}).items():
                print(
                    f"{count:>6}  {variant:<12}{step:<22}{means.get('scheduler', 0):>10.2f}"
                    f"{means['wait']:>10.2f}{means['run']:>8.2f}"
                )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--scheduler", action="store_true", help="under a real deployment")
    parser.add_argument("--rows", type=int, default=None, help="rows a table")
    parser.add_argument("--parallelism", type=int, default=8, help="[core] parallelism")
    parser.add_argument("--batch", type=int, default=BATCH, help="tables a task, batched")
    parser.add_argument(
        "--tasks",
        type=int,
        nargs="+",
        default=[TASKS],
        help="per core: the batches (tasks), by default the cores; several: a form each",
    )
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), help="dogana's forms")
    parser.add_argument("--child", nargs=4, metavar=("MAPPED", "PER_FILE", "FOLDER", "RESULT"))
    args = parser.parse_args(argv)
    if args.child:
        run_child(*args.child)
        return 0
    if args.scheduler:
        rows = args.rows or SCHEDULER_ROWS
        chosen = args.variants or list(VARIANTS)
        return (
            0
            if scheduled(args.tables, rows, args.parallelism, args.batch, args.tasks, chosen)
            else 1
        )
    work = Path(tempfile.mkdtemp(prefix="dogana-bench-many-"))
    try:
        results = {count: measure(count, work) for count in args.tables}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if report(results) else 1


if __name__ == "__main__":
    sys.exit(main())
