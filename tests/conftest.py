"""Shared fixtures: the two database servers and a temporary Airflow home.

Nothing here imports Airflow at import time. Airflow reads its configuration when it is first
imported, so the temporary AIRFLOW_HOME is put in the environment in ``pytest_configure``,
before any test module can import it; the ``airflow_home`` fixture migrates its metadata
database once, for the tests that ask for it.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
MARIADB_URL = "mysql://root@127.0.0.1:3306/test"

_AIRFLOW_HOME: Path | None = None


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def _server_url(name: str, host: str, port: int, url: str) -> str:
    """Return url when host:port accepts a TCP connection; otherwise skip, or fail in CI."""
    try:
        with socket.create_connection((host, port), timeout=3):
            return url
    except OSError as error:
        reason = f"{name} not reachable at {host}:{port}: {error}"
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing server is a failure, not a skip)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """PostgreSQL with trust auth, role postgres, database test."""
    return _server_url("PostgreSQL", "127.0.0.1", 5432, POSTGRES_URL)


@pytest.fixture(scope="session")
def mariadb_url() -> str:
    """MariaDB as root with an empty password, database test."""
    return _server_url("MariaDB", "127.0.0.1", 3306, MARIADB_URL)


def pytest_configure(config: pytest.Config) -> None:
    global _AIRFLOW_HOME
    _AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="dogana-airflow-home-"))
    os.environ.update(
        {
            "AIRFLOW_HOME": str(_AIRFLOW_HOME),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_AIRFLOW_HOME / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(_AIRFLOW_HOME / "dags"),
            # A run's deliveries in this session's own folder, not in the machine's shared
            # temporary one, where another session (or another xdist worker) sweeps its own.
            "AIRFLOW__DOGANA__DELIVERY_FOLDER": (_AIRFLOW_HOME / "deliveries").as_uri(),
        }
    )
    (_AIRFLOW_HOME / "dags").mkdir()


SHARED_FOLDERS = ("tests/deployment/", "tests/install/")
"""The folders whose tests share a session fixture of their conftest (the deployment, the
installed environments): run on one pytest-xdist worker, it is set up once."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist's ``--dist loadfile`` (dev.py test), a test file is one unit of work,
    so its module fixtures are set up once, and so is each of SHARED_FOLDERS."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class SharedSetupScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            folder = next((f for f in SHARED_FOLDERS if nodeid.startswith(f)), None)
            return folder or super()._split_scope(nodeid)

    return SharedSetupScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _AIRFLOW_HOME is not None:
        shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_home() -> Iterator[Path]:
    """A temporary AIRFLOW_HOME whose SQLite metadata database is migrated, once per session.

    In Airflow 3, ``dag.test()`` serializes the DAG by parsing the DAGs folder, so a test's DAG
    must live in a file under ``airflow_home / "dags"`` (that folder is the DAGs folder); a DAG
    built only in memory fails with "the dag is not serialized".

    A test that needs the metadata database elsewhere copies it with copy_metadata_database,
    never by opening airflow.db as a file in this process (the fixture says why).
    """
    assert _AIRFLOW_HOME is not None
    assert os.environ.get("AIRFLOW_HOME") == str(_AIRFLOW_HOME), "AIRFLOW_HOME was changed"
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(
            f"airflow db migrate failed (exit {result.returncode}):\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    yield _AIRFLOW_HOME


@pytest.fixture(scope="module", autouse=True)
def dag_files_kept_to_their_module() -> Iterator[None]:
    """What a test module adds to the session's DAGs folder, removed once the module is done.

    Every dag.test() parses every file of the DAGs folder (it syncs the folder's bundle to the
    metadata database), so files the modules before left there would make each run of a later
    module parse them all again. A module's own files stay while it runs: its tests may share a
    DAG file. No fixture wider than a module writes there.
    """
    assert _AIRFLOW_HOME is not None
    folder = _AIRFLOW_HOME / "dags"
    before = set(folder.iterdir())
    yield
    for added in set(folder.iterdir()) - before:
        if added.is_dir() and not added.is_symlink():
            shutil.rmtree(added, ignore_errors=True)
        else:
            added.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def copy_metadata_database(airflow_home: Path) -> Callable[[Path], None]:
    """copy(target): the session's metadata database copied to target, for another Airflow home.

    Through SQLite's backup API, never as a file. A plain copy opens and closes airflow.db in
    this process, and closing any descriptor of a file drops every POSIX lock the process holds
    on it: Airflow's pooled connections keep running without their shared lock. The next other
    process to close the database (an `airflow` or `dogana` command of a later test) then takes
    itself for the last reader and deletes the -wal and -shm files under them: once an older
    connection has written again, one this process opens after that (a test thread's session
    beside dag.test()'s) fails with "disk I/O error". A plain copy also misses what is committed
    in the -wal file but not yet checkpointed into airflow.db.
    """

    def copy(target: Path) -> None:
        # The same SQLite library as Airflow's engine, so closing it keeps their locks.
        with (
            closing(sqlite3.connect(airflow_home / "airflow.db")) as source,
            closing(sqlite3.connect(target)) as copied,
        ):
            source.backup(copied)

    return copy
