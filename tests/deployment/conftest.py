"""The real-scheduler layer's one deployment, shared by every test of tests/deployment/.

One Airflow deployment (deployment.py: LocalExecutor, PostgreSQL metadata database, scheduler,
DAG processor, triggerer, API server) is started once per session and stopped after the last
test. Its DAGs folder holds dags/examples/ as it is (in a folder examples/), and the tests' own
DAGs from tests/deployment/dags/ with their folders of contract files (dags/batched_contracts/).
The examples' source is a SQLite file (source_tables.py fills it), a connection in the
environment, and their receiver a PostgreSQL schema of the session's own, a connection in the
metadata database (`airflow connections add`); the test DAGs read their own SQLite source. The
web orders example reads a JSON Lines file (DOGANA_WEB_ORDERS_JSONL), and the API orders example
the test API (tests/api_server.py), a process on 127.0.0.1 for the session, through the
example's http connection shop_api in the metadata database.
A test that needs an empty receiver creates one (a fresh schema or database) and a connection
to it through the REST API.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import psycopg
import psycopg2
import pytest
from api_servers import SERVER, Api
from deployment import Client, Deployment
from example_activation import example_tables, require_and_activate
from source_tables import fill_examples, fill_tests, write_web_orders
from stories import STORIES, Played, Servers, drop_schema

from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dags" / "examples"
TEST_DAGS = Path(__file__).resolve().parent / "dags"
API_CONN_ID = "shop_api"
"""The http connection to the test API: the one dags/examples/api_orders.py reads."""
USERS = {"grace.hopper": "user", "svc_reports": "user"}
"""The deployment's logins beside its administrator's: a person's, and an automation's as a
script calling the REST API has one (test_gates.py triggers the activation DAG as each)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if in_layer(item):
            item.add_marker(pytest.mark.deployment)


def in_layer(item: pytest.Item) -> bool:
    return Path(str(item.fspath)).is_relative_to(Path(__file__).parent)


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two SQLite files, the examples' source system and the test DAGs', and the web shop's
    change log (its file's name is the example's stream)."""
    folder = tmp_path_factory.mktemp("deployment")
    found = {
        "examples": folder / "examples.sqlite",
        "tests": folder / "tests.sqlite",
        "web_orders": folder / "web_orders.jsonl",
    }
    for name, fill in (("examples", fill_examples), ("tests", fill_tests)):
        connection = sqlite3.connect(found[name])
        try:
            fill(connection)
        finally:
            connection.close()
    write_web_orders(found["web_orders"])
    return found


@pytest.fixture(scope="session")
def api() -> Iterator[Api]:
    """The test API as a process on 127.0.0.1 for the session; its change log of seven orders
    then changed, one updated and one deleted, before any read."""
    process = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        found = Api(int(process.stdout.readline().split()[1]), API_CONN_ID)
        found.append({"order_id": 2, "amount": 21.0}, {"order_id": 5, "deleted": True})
        yield found
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def examples_receiver(postgres_url: str) -> Iterator[str]:
    """The examples' receiver: a PostgreSQL schema of the session's own, dropped after it. It
    requires activation, as the PostgreSQL examples document, and every example table is
    activated before the deployment starts (example_activation.py), as is the test DAGs'
    parcels."""
    schema = f"dogana_examples_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    receiver = Receiver(
        lambda: psycopg2.connect(postgres_url, options=f"-csearch_path={schema}"), POSTGRES
    )
    # parcels and deposits: test DAGs' tables (dags/parcels.py, dags/gated.py) in this receiver
    # too; accounts (dags/gated.py) stays pending until test_gates.py activates it.
    require_and_activate(receiver, [*example_tables(), "parcels", "deposits"])
    try:
        yield schema
    finally:
        drop_schema(postgres_url, schema)


@pytest.fixture(scope="session")
def deployment(
    postgres_url: str, sources: dict[str, Path], examples_receiver: str, api: Api
) -> Iterator[Deployment]:
    """The layer's deployment, started once; its processes end when the session does."""
    environment = {
        "AIRFLOW_CONN_DOGANA_SOURCE": sqlite_connection(sources["examples"]),
        "AIRFLOW_CONN_DOGANA_TEST_SOURCE": sqlite_connection(sources["tests"]),
        "DOGANA_WEB_ORDERS_JSONL": str(sources["web_orders"]),
        # The suffix of what dags/log_capture.py names in the shared servers (tables, a slot).
        "DOGANA_TEST_RUN": uuid.uuid4().hex[:10],
    }
    # The receiver and the API in the metadata database, as `airflow connections add` keeps
    # them: where the tasks and a person's `dogana` commands at the deployment's terminal find them.
    connections = {
        "dogana_default": postgres_connection(postgres_url, examples_receiver),
        API_CONN_ID: json.dumps({"conn_type": "http", "host": "127.0.0.1", "port": api.port}),
    }
    # The examples' folder whole: warehouse.py reads the contract files beside it; and the test
    # DAGs' folders of contract files beside them (dags/batched.py's).
    folders = [path for path in TEST_DAGS.iterdir() if path.is_dir() and path.name[0] != "_"]
    dags = [EXAMPLES, *sorted(TEST_DAGS.glob("*.py")), *sorted(folders)]
    with Deployment(
        postgres_url, dags=dags, environment=environment, connections=connections, users=USERS
    ) as started:
        yield started


@pytest.fixture(scope="session")
def client(deployment: Deployment) -> Client:
    return deployment.client()


@pytest.fixture(scope="session")
def played(request: pytest.FixtureRequest, deployment: Deployment) -> Iterator[Played]:
    """Every story of the modules this session runs, started at once (stories.py)."""
    modules = {item.module.__name__ for item in request.session.items if in_layer(item)}
    chosen = {name: play for name, play in STORIES.items() if play.__module__ in modules}
    servers = reachable(request)
    with ThreadPoolExecutor(max_workers=max(len(chosen), 1)) as pool:
        futures = {
            name: pool.submit(play, deployment.client(), servers) for name, play in chosen.items()
        }
        yield Played(futures)


def reachable(request: pytest.FixtureRequest) -> Servers:
    """Each server's URL, or None where its fixture skips (a test needing it skips itself)."""
    servers: Servers = {}
    for kind in ("postgres", "mariadb"):
        try:
            servers[kind] = request.getfixturevalue(f"{kind}_url")
        except pytest.skip.Exception:
            servers[kind] = None
    return servers


def sqlite_connection(path: Path) -> str:
    return json.dumps({"conn_type": "sqlite", "host": str(path)})


def postgres_connection(postgres_url: str, schema: str) -> str:
    """An AIRFLOW_CONN_* URI whose every session resolves tables in schema (libpq options)."""
    return f"{postgres_url}?options={quote(f'-csearch_path={schema}')}"
