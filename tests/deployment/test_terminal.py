"""A person at the deployment's terminal: the `dogana` commands run with the deployment's
AIRFLOW_HOME and metadata database settings but no AIRFLOW_CONN_* variable, against the receiver
connection the deployment keeps only in its metadata database (`airflow connections add`,
conftest.py), as `dogana status`, `holds` and `forget` are run beside a live scheduler.
"""

from __future__ import annotations

import uuid

import psycopg2
from deployment import Deployment

from dogana_core import Contract, Shape
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

RECEIVER = "dogana_default"


def test_status_holds_and_forget_find_a_receiver_kept_only_in_the_metadata_database(
    deployment: Deployment, postgres_url: str, examples_receiver: str
) -> None:
    assert f"AIRFLOW_CONN_{RECEIVER.upper()}" not in deployment.environment
    assert not any(name.startswith("AIRFLOW_CONN_") for name in deployment.terminal_environment())
    # A misspelt table a plan registered before its extract failed: never published.
    misspelt = f"custommers_{uuid.uuid4().hex[:8]}"
    receiver = Receiver(
        lambda: psycopg2.connect(postgres_url, options=f"-csearch_path={examples_receiver}"),
        POSTGRES,
    )
    receiver.register(Contract(misspelt, ("id",), {"full": Shape.complete()}, types={"id": "int"}))

    status = deployment.at_the_terminal("status", RECEIVER)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"receiver {RECEIVER!r} (")
    (row,) = [line for line in status.stdout.splitlines() if line.startswith(f"{misspelt} ")]
    assert row.split()[1] == "unknown"

    holds = deployment.at_the_terminal("holds", RECEIVER)
    assert holds.returncode == 0, holds.stderr
    assert holds.stdout.startswith(f"receiver {RECEIVER!r}: ")

    forget = deployment.at_the_terminal("forget", RECEIVER, misspelt)
    assert forget.returncode == 0, forget.stderr
    assert forget.stdout.splitlines() == [
        f"receiver {RECEIVER!r}: table {misspelt} forgotten, with its 0 rejected receipts"
    ]
    after = deployment.at_the_terminal("status", RECEIVER)
    assert after.returncode == 0, after.stderr
    assert misspelt not in after.stdout
    for result in (status, holds, forget, after):
        assert "Traceback" not in result.stderr
