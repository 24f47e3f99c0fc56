"""A delivery under CeleryExecutor: two workers, each with its own temporary directory and queue.

One deployment (deployment.py) with CeleryExecutor, the Redis server on this machine as its
broker (a database number of the module's own, flushed after), and two `airflow celery worker`
processes, each serving a queue named after it: ``configured``, whose [dogana] delivery_folder
is a folder both workers see, and ``unconfigured``, at the default folder. The DAGs
(celery_dags/) extract on one worker and gate on the other, so a run's files cross from one
worker to the other as between two machines.

Two processes of one machine see each other's files, so each worker runs in a mount namespace
of its own (unshare) with an empty tmpfs on its TMPDIR: what one worker writes there the other
does not see, as on two machines. A folder outside both (the test's shared folder) both see.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from deployment import Client, Deployment, Run, Service

DAGS = Path(__file__).resolve().parent / "celery_dags"
REDIS = ("127.0.0.1", 6379)
QUEUES = ("configured", "unconfigured")
# A mount namespace whose TMPDIR is an empty tmpfs, seen by this worker and its tasks only.
PRIVATE_TMPDIR = (
    "unshare", "--mount", "--propagation", "private",
    "sh", "-c", 'mount -t tmpfs dogana-worker-tmp "$TMPDIR" && exec "$@"', "worker",
)  # fmt: skip
ROWS = {"orders": [(1,), (2,), (3,)], "customers": [(10,), (11,)]}


@dataclass
class Celery:
    deployment: Deployment
    client: Client
    shared: Path
    temporary: dict[str, Path]  # queue -> the temporary directory of the worker serving it
    receiver: Path


def in_ci() -> bool:
    # tests/conftest.py's rule; not imported, as tests/deployment has a conftest of its own.
    return os.environ.get("CI", "").strip().lower() == "true"


@contextmanager
def redis_database() -> Iterator[int]:
    """A Redis database number nobody uses now (empty), flushed after; without Redis, skips
    (fails in CI)."""
    import redis

    try:
        redis.Redis(*REDIS, db=0, socket_timeout=3).ping()
    except redis.RedisError as error:
        reason = f"Redis not reachable at {REDIS[0]}:{REDIS[1]}: {error}"
        if in_ci():
            pytest.fail(f"{reason} (CI=true: a missing server is a failure, not a skip)")
        pytest.skip(reason)
    for number in random.sample(range(1, 16), 15):
        server = redis.Redis(*REDIS, db=number)
        if server.dbsize() == 0:
            try:
                yield number
            finally:
                server.flushdb()  # only this database: others' tests use the rest
            return
    pytest.fail("every Redis database 1..15 holds keys; none is free for this test")


def private_tmpdir_works() -> None:
    """Skip (fail in CI) where this process may not make mount namespaces (not root)."""
    probe = subprocess.run(
        [*PRIVATE_TMPDIR, "true"], env={"TMPDIR": "/tmp"}, capture_output=True, text=True
    )
    if probe.returncode != 0:
        reason = f"cannot give a worker a private TMPDIR (unshare --mount): {probe.stderr}"
        if in_ci():
            pytest.fail(f"{reason} (CI=true: a missing capability is a failure, not a skip)")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def celery(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Celery]:
    private_tmpdir_works()
    base = tmp_path_factory.mktemp("celery")
    shared, source, receiver = base / "shared", base / "source.sqlite", base / "receiver.sqlite"
    shared.mkdir()
    with sqlite3.connect(source) as connection:
        for table, rows in ROWS.items():
            connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
            connection.executemany(f"INSERT INTO {table} VALUES (?)", rows)
    connection.close()
    temporary = {queue: base / f"tmp-{queue}" for queue in QUEUES}
    # Only the configured worker names the shared folder; the other keeps the default.
    folders = {"configured": {"AIRFLOW__DOGANA__DELIVERY_FOLDER": shared.as_uri()}}
    workers = []
    for queue, folder in temporary.items():
        folder.mkdir()
        worker = ("celery", "worker", "--queues", queue, "--concurrency", "1",
                  "--celery-hostname", f"{queue}@%h", "--skip-serve-logs",
                  "--without-gossip", "--without-mingle")  # fmt: skip
        environment = {"TMPDIR": str(folder), **folders.get(queue, {})}
        workers.append(Service(f"worker-{queue}", worker, environment, prefix=PRIVATE_TMPDIR))
    with redis_database() as number:
        settings = {
            "AIRFLOW__CELERY__BROKER_URL": f"redis://{REDIS[0]}:{REDIS[1]}/{number}",
            "AIRFLOW_CONN_CELERY_SOURCE": json.dumps({"conn_type": "sqlite", "host": str(source)}),
            "AIRFLOW_CONN_CELERY_RECEIVER": json.dumps(
                {"conn_type": "sqlite", "host": str(receiver)}
            ),
        }
        with Deployment(
            postgres_url,
            dags=sorted(DAGS.glob("*.py")),
            environment=settings,
            executor="CeleryExecutor",
            services=workers,
        ) as deployment:
            client = deployment.client()
            dag_ids = ["dogana_celery_configured_folder", "dogana_celery_default_folder"]
            client.wait_parsed(dag_ids)
            for dag_id in dag_ids:
                client.unpause(dag_id)
            yield Celery(deployment, client, shared, temporary, receiver)


def published(receiver: Path, table: str) -> list[tuple[int]]:
    with sqlite3.connect(receiver) as connection:
        rows = connection.execute(f"SELECT id FROM {table} ORDER BY id").fetchall()
    connection.close()
    return rows


def queues(client: Client, run: Run) -> dict[str, str]:
    return {ti["task_id"]: ti["queue"] for ti in client.task_instances(run)}


def test_a_delivery_crosses_from_one_worker_to_another_through_the_configured_folder(
    celery: Celery,
) -> None:
    client = celery.client
    run = client.trigger("dogana_celery_configured_folder")
    assert client.wait(run)["state"] == "success", client.states(run)
    assert queues(client, run) == {
        "plan": "configured",
        "extract": "configured",
        "gate": "unconfigured",
        "publish": "configured",
    }
    uri = client.xcom(run, "extract")["uri"]
    run_folder = celery.shared / "dogana_celery_configured_folder"
    assert uri.startswith(run_folder.as_uri() + "/"), uri
    assert client.xcom(run, "publish")["outcome"] == "accepted"
    assert published(celery.receiver, "orders") == ROWS["orders"]
    # Published: its file and run folder are gone, and nothing else is in the folder.
    assert sorted(p for p in celery.shared.rglob("*") if p.is_file()) == []


def test_with_the_default_local_folder_the_gate_fails_naming_the_setting(celery: Celery) -> None:
    client = celery.client
    run = client.trigger("dogana_celery_default_folder")
    assert client.wait(run)["state"] == "failed"
    assert client.states(run) == {
        "plan": "success",
        "extract": "success",
        "gate": "failed",
        "publish": "upstream_failed",
    }
    assert queues(client, run)["extract"] == "unconfigured"
    # The extract wrote under its own worker's temporary directory, which the other lacks.
    uri = client.xcom(run, "extract")["uri"]
    assert uri.startswith((celery.temporary["unconfigured"] / "dogana").as_uri() + "/"), uri
    log = celery.deployment.task_log(run, "gate")
    assert "MissingDelivery" in log and "under CeleryExecutor" in log, log[-3000:]
    assert "[dogana] delivery_folder (environment variable AIRFLOW__DOGANA__DELIVERY_FOLDER)" in log
    assert "FileNotFoundError" not in log
