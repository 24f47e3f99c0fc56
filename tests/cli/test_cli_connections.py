"""The receiver a person names at a terminal: an Airflow connection kept where teams keep them
(the metadata database, as `airflow connections add` writes it), or a URL; and the messages
when it cannot be opened.

Each test runs the installed `dogana` script with the session's AIRFLOW_HOME (a migrated SQLite
metadata database, tests/conftest.py) and no AIRFLOW_CONN_ variable for the connection it names.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cli_fixtures import dogana
from cryptography.fernet import Fernet
from several_tables import PASSWORD, Live

pytestmark = pytest.mark.airflow  # the commands open the receiver through DoganaHook


@pytest.fixture(autouse=True)
def fernet_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """One [core] fernet_key for every process of a test, as a deployment's airflow.cfg has: the
    metadata database keeps a password encrypted with it (unit test mode makes one per process,
    and a password one process stored no other could read)."""
    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", Fernet.generate_key().decode())


def add_connection(conn_id: str, connection: str) -> None:
    """`airflow connections add`, as a person adds a connection to the metadata database."""
    spelled = "--conn-json" if connection.startswith("{") else "--conn-uri"
    added = subprocess.run(
        [sys.executable, "-m", "airflow", "connections", "add", conn_id, spelled, connection],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    assert f"AIRFLOW_CONN_{conn_id.upper()}" not in os.environ


def test_a_connection_in_airflows_metadata_database_names_a_receiver(
    airflow_home: Path, live: Live, tmp_path: Path
) -> None:
    """status and holds find a connection only the metadata database holds, as `airflow
    connections get` finds it; its password is never printed."""
    conn_id = f"warehouse_{uuid.uuid4().hex[:8]}"
    add_connection(conn_id, live.connection)
    status = dogana("status", conn_id, cwd=tmp_path)
    assert status.code == 0, status.err
    assert status.out.splitlines()[0].startswith(f"receiver {conn_id!r} (")
    assert status.out.splitlines()[0].endswith(f": {len(live.filled.tables)} tables")
    holds = dogana("holds", conn_id, cwd=tmp_path)
    assert holds.code == 0, holds.err
    assert holds.out.splitlines() == [f"receiver {conn_id!r}: 0 held deliveries"]
    for result in (status, holds):
        assert PASSWORD not in result.out + result.err
        assert "Traceback" not in result.err


def test_a_connection_defined_nowhere_is_a_usage_error_saying_where_it_was_looked_for(
    airflow_home: Path, tmp_path: Path
) -> None:
    result = dogana("status", "no_such_connection", cwd=tmp_path)
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    (line,) = result.err.strip().splitlines()
    assert line.startswith("dogana status: usage error: 'no_such_connection': no such Airflow")
    for where in ("AIRFLOW_CONN_NO_SUCH_CONNECTION", "metadata database", "secrets backend"):
        assert where in line


def test_a_missing_extra_names_the_url_typed_masked_and_prints_no_traceback(
    airflow_home: Path, tmp_path: Path
) -> None:
    """The PostgreSQL provider is installed in this environment, so the command runs in a
    Python that cannot import it (sys.modules holds None for it, as Python's import system marks
    a module that must not be found), after Airflow has listed the providers installed."""
    url = f"postgresql://loader:{PASSWORD}@127.0.0.1:5432/test"
    script = (
        "import sys\n"
        "from airflow.providers_manager import ProvidersManager\n"
        "ProvidersManager().initialize_providers_list()\n"
        "sys.modules['airflow.providers.postgres'] = None\n"
        "from dogana_provider.cli.main import main\n"
        f"raise SystemExit(main(['status', {url!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("dogana status: usage error: connection postgresql://loader:***@127")
    assert "pip install 'airflow-provider-dogana[postgres]'" in line
    assert "dogana_cli_receiver" not in line and PASSWORD not in done.stdout + done.stderr


@pytest.mark.postgres
def test_cdc_status_and_drop_slot_find_a_source_kept_only_in_the_metadata_database(
    airflow_home: Path, postgres_url: str, tmp_path: Path
) -> None:
    conn_id = f"shop_{uuid.uuid4().hex[:8]}"
    add_connection(conn_id, postgres_url)
    slot = f"dogana_none_{uuid.uuid4().hex[:8]}"
    for command in (("status", conn_id, "--slot", slot), ("drop-slot", conn_id, "--slot", slot)):
        result = dogana("cdc", *command, cwd=tmp_path)
        # Refused for the slot, which is not there: the source's connection itself was found.
        assert result.code == 1, result.err
        assert "Traceback" not in result.err
        assert f"{conn_id}: no " in result.err and slot in result.err
