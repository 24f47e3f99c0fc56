"""dogana as users install it: the built wheel in a fresh environment that holds only Airflow.

A data team adds the provider to an Airflow of its own: `pip install apache-airflow==X
airflow-provider-dogana[postgres]` with the constraints of release X. Here that install goes
into a fresh virtual environment, at the oldest Airflow release the package declares and at
the newest, without the MariaDB client headers (the mysql extra's driver compiles against them,
and nothing here may need it), and the README's DAG runs there on PostgreSQL. The two
environments are installed side by side once, and serve every test.

They take minutes, so these tests run in CI (CI=true) or when asked (DOGANA_INSTALL_TESTS=1);
elsewhere they skip and say so. The package index sends no caching headers, so pip's own cache
keeps nothing: each resolved environment's wheels are kept in a wheelhouse (wheelhouse.py), and
later runs install from it without the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version
from release import EXTRA_ONLY, ROOT, Dist, declared_airflow
from wheelhouse import Wheelhouse, clean_environment, pip, run

import dogana_provider

QUICKSTART = ROOT / "examples" / "quickstart.py"
RUN_DAG = Path(__file__).resolve().parent / "run_dag.py"
# Airflow publishes a constraints file per release, which a user installs with; this machine
# cannot reach it, so what a release needs pinned is pinned here (constraints/README.md).
CONSTRAINTS = Path(__file__).resolve().parent / "constraints"

pytestmark = pytest.mark.skipif(
    os.environ.get("CI", "").lower() != "true" and os.environ.get("DOGANA_INSTALL_TESTS") != "1",
    reason="installs Airflow into fresh environments (minutes): runs with CI=true or "
    "DOGANA_INSTALL_TESTS=1",
)


@dataclass(frozen=True)
class Installed:
    """A virtual environment with Airflow, then dogana's wheel and its [postgres] extra, and an
    Airflow home whose DAGs folder holds the README's DAG and whose metadata is migrated."""

    name: str
    root: Path
    airflow_version: str
    env: dict[str, str]
    home: Path
    wheelhouse: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def run_dag(self, source: str, receiver: str) -> Run:
        """The README's DAG run once with these connections."""
        env = {
            **self.env,
            "AIRFLOW_CONN_DOGANA_SOURCE": source,
            "AIRFLOW_CONN_DOGANA_DEFAULT": receiver,
        }
        dag_file = self.home / "dags" / QUICKSTART.name
        done = run([str(self.python), str(RUN_DAG), str(dag_file), "customers"], env=env)
        [line] = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        return Run(json.loads(line.removeprefix("RESULT ")), done.stdout + done.stderr)


def oldest_airflow() -> str:
    """The release the declared range starts at: >=3.2 is 3.2.0."""
    [low] = [Version(s.version) for s in declared_airflow().specifier if s.operator == ">="]
    return ".".join(str(part) for part in (*low.release, 0, 0)[:3])


def install(dist: Dist, name: str, version: str, base: Path) -> Installed:
    """A fresh environment as the Airflow docs install a provider: the Airflow release and the
    provider in one pip install, with the pins that release needs (constraints/)."""
    root, home = base / "venv", base / "home"
    env = clean_environment(base / "no-mariadb-headers", root)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            # Deliveries in this home, not in the machine's shared temporary folder.
            "AIRFLOW__DOGANA__DELIVERY_FOLDER": (home / "deliveries").as_uri(),
        }
    )
    stock = f"apache-airflow=={version}"
    wanted = f"{dist.wheel}[postgres]"
    pins = CONSTRAINTS / f"apache-airflow-{version}.txt"
    pinned = ["--constraint", str(pins)] if pins.exists() else []
    wheelhouse = Wheelhouse.default()
    folder = wheelhouse.prepare([stock, wanted], env, pins if pins.exists() else None)
    # No pip of its own: this process's pip installs into it (pip --python), seconds sooner.
    run([sys.executable, "-m", "venv", "--without-pip", str(root)], env=env)
    wheelhouse.install(root, folder, [stock, wanted, *pinned], env)
    (home / "dags").mkdir(parents=True)
    (home / "dags" / QUICKSTART.name).write_bytes(QUICKSTART.read_bytes())
    run([str(root / "bin" / "airflow"), "db", "migrate"], env=env, cwd=home)
    return Installed(name, root, version, env, home, folder)


@pytest.fixture(scope="session")
def environments(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Installed]:
    """Both environments, installed side by side (pip waits on the network and the disk)."""
    versions = {
        "oldest": oldest_airflow(),
        "newest": Wheelhouse.default().newest(declared_airflow()),
    }
    with ThreadPoolExecutor(max_workers=len(versions)) as pool:
        futures = {
            name: pool.submit(
                install, dist, name, version, tmp_path_factory.mktemp(f"airflow-{version}")
            )
            for name, version in versions.items()
        }
        return {name: future.result() for name, future in futures.items()}


@dataclass(frozen=True)
class Run:
    """What run_dag.py printed as its RESULT, and all it printed."""

    result: dict
    output: str


def quickstart_on_postgresql(installed: Installed, url: str) -> Run:
    """The README's DAG, from a customers table in one schema to a warehouse in another."""
    with postgres_schemas(url) as (source, receiver):
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(
                f"CREATE TABLE {source}.customers (customer_id BIGINT PRIMARY KEY, name TEXT)"
            )
            connection.execute(
                f"INSERT INTO {source}.customers VALUES (1, 'ada'), (2, 'edsger'), (3, 'grace')"
            )
        return installed.run_dag(schema_url(url, source), schema_url(url, receiver))


def quickstart_without_mysql_extra(installed: Installed, warehouse: Path) -> Run:
    """The README's DAG from a MySQL source, where only [postgres] is installed; the server is
    never reached: the missing provider is found before Airflow resolves the hook."""
    receiver = json.dumps({"conn_type": "sqlite", "host": str(warehouse)})
    return installed.run_dag("mysql://root@127.0.0.1:3306/test", receiver)


@pytest.fixture(scope="session")
def runs(
    environments: dict[str, Installed], postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Run]:
    """The DAG runs the tests below read, each environment's side by side with the other's (an
    environment's own runs one after the other: they share its SQLite metadata database)."""
    warehouse = tmp_path_factory.mktemp("no-mysql-extra") / "warehouse.sqlite"

    def oldest() -> dict[str, Run]:
        return {"oldest": quickstart_on_postgresql(environments["oldest"], postgres_url)}

    def newest() -> dict[str, Run]:
        return {
            "newest": quickstart_on_postgresql(environments["newest"], postgres_url),
            "no-mysql-extra": quickstart_without_mysql_extra(environments["newest"], warehouse),
        }

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(oldest), pool.submit(newest)]
        return {name: run for future in futures for name, run in future.result().items()}


@pytest.fixture(params=["oldest", "newest"])
def installed(request: pytest.FixtureRequest, environments: dict[str, Installed]) -> Installed:
    """The wheel with [postgres] in a fresh environment, on the oldest or the newest Airflow."""
    return environments[request.param]


def test_the_fresh_environment_has_no_mariadb_headers_nor_driver(installed: Installed) -> None:
    found = subprocess.run(["pkg-config", "--exists", "mariadb"], env=installed.env)
    assert found.returncode != 0
    listed = run([*pip(installed.root), "list", "--format=json"], env=installed.env)
    names = {canonicalize_name(p["name"]) for p in json.loads(listed.stdout)}
    assert "mysqlclient" not in names and "apache-airflow-providers-mysql" not in names


def test_readme_dag_delivers_on_postgresql_in_a_fresh_install(
    installed: Installed, runs: dict[str, Run]
) -> None:
    result, output = runs[installed.name].result, runs[installed.name].output
    assert result["airflow"] == installed.airflow_version
    assert Path(result["dogana_provider"]).is_relative_to(installed.root), result
    assert result["provider_version"] == dogana_provider.__version__
    assert result["states"] == dict.fromkeys(["plan", "extract", "gate", "publish"], "success"), (
        output[-6000:]
    )
    assert result["columns"] == ["customer_id", "name"]
    assert result["rows"] == [[1, "ada"], [2, "edsger"], [3, "grace"]]
    assert result["claims"] == "complete"


def test_a_connection_without_its_extra_fails_naming_the_extra(runs: dict[str, Run]) -> None:
    result, output = runs["no-mysql-extra"].result, runs["no-mysql-extra"].output
    assert result["states"]["plan"] == "success"
    assert result["states"]["extract"] == "failed"
    assert "pip install 'airflow-provider-dogana[mysql]'" in output


def test_installing_without_extras_compiles_no_database_driver(
    environments: dict[str, Installed], dist: Dist, tmp_path: Path
) -> None:
    """What pip would install for the wheel alone, where Airflow is not installed yet.

    Resolved from the newest environment's wheelhouse, which pip resolved against the package
    index for the wheel with [postgres]: a driver the wheel alone required would be listed,
    and one outside [postgres] (mysqlclient) is not there, so the resolution would fail.
    """
    newest = environments["newest"]
    report = tmp_path / "report.json"
    run(
        [*pip(newest.root), "install", "--dry-run", "--ignore-installed",
         "--quiet", "--no-index", "--find-links", str(newest.wheelhouse),
         "--report", str(report), str(dist.wheel)],
        env=newest.env,
    )  # fmt: skip
    install = json.loads(report.read_text())["install"]
    names = {canonicalize_name(item["metadata"]["name"]) for item in install}
    assert "apache-airflow" in names and "apache-airflow-providers-sqlite" in names
    assert sorted(names & EXTRA_ONLY) == []
    sources = [
        item["metadata"]["name"]
        for item in install
        if not item["download_info"]["url"].endswith(".whl")
    ]
    assert sources == [], f"built from source, not installed from a wheel: {sources}"


# PostgreSQL ------------------------------------------------------------------------------------


def schema_url(url: str, schema: str) -> str:
    """The connection URI whose sessions resolve tables in schema (libpq options)."""
    return f"{url}?options={quote(f'-csearch_path={schema}')}"


@contextmanager
def postgres_schemas(url: str) -> Iterator[tuple[str, str]]:
    """A source schema and a receiver schema of the test database, this test's own."""
    uid = uuid.uuid4().hex[:8]
    names = (f"install_src_{uid}", f"install_dst_{uid}")
    with psycopg.connect(url, autocommit=True) as connection:
        for name in names:
            connection.execute(f"CREATE SCHEMA {name}")
    try:
        yield names
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            for name in names:
                connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
