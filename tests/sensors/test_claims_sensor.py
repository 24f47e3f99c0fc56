"""ClaimsSensor in poke and deferrable modes, run by dag.test() against a real receiver."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operators"))

from delivery_dags import (
    SCHEMA,
    batch,
    orders_contract,
    sqlite_connection,
    states,
    write_dag,
    xcom,
)

from dogana_core import Claims, Outcome
from dogana_provider.delivery.files import DeliveryWriter
from dogana_provider.dialects import SQLITE
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.receiver.receiver import Receiver

pytestmark = pytest.mark.airflow


def deliver_full(receiver: Receiver, table: str, folder: Path, produced_at: datetime) -> None:
    """Register the table and publish a complete read of two rows made at produced_at."""
    contract = orders_contract(table)
    receiver.register(contract)
    row = {"day": "2026-01-01", "updated_at": produced_at.isoformat(), "deleted": False}
    chosen = [(1, {**row, "name": "one"}, False), (2, {**row, "name": "two"}, False)]
    path = folder / f"{table}.parquet"
    with DeliveryWriter(path, contract, SCHEMA) as writer:
        writer.write(batch(chosen))
        written = writer.close()
    manifest = written.manifest(contract, "full", produced_at)
    receipt = receiver.receive(path, manifest)
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, DoganaHook]:
    """A SQLite receiver behind a connection id (the database file is tmp_path / "r.db")."""
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    return conn_id, DoganaHook(conn_id)


def sensor_dag(dag_id: str, conn_id: str, sensors: dict[str, str]) -> str:
    """A DAG body of independent ClaimsSensor tasks, task_id -> keyword arguments."""
    tasks = "\n".join(
        f"    ClaimsSensor(task_id={task_id!r}, receiver_conn_id={conn_id!r}, {kwargs})"
        for task_id, kwargs in sensors.items()
    )
    return "from dogana_provider.sensors.claims import ClaimsSensor\n\nwith dag:\n" + tasks + "\n"


def test_claims_sensor_succeeds_when_claims_are_met_in_poke_and_deferrable_modes(
    airflow_home: Path, tmp_path: Path, receiver: tuple[str, DoganaHook]
) -> None:
    conn_id, hook = receiver
    uid = uuid.uuid4().hex[:8]
    invoices, lines = f"invoices_{uid}", f"lines_{uid}"
    p = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    deliver_full(hook.receiver, invoices, tmp_path, p)
    deliver_full(hook.receiver, lines, tmp_path, p)
    fast = "poke_interval=0.2, timeout=30"
    module = write_dag(
        airflow_home,
        f"sensors_met_{uid}",
        sensor_dag(
            f"sensors_met_{uid}",
            conn_id,
            {
                "exact_poke": f"tables={invoices!r}, exact_at={p.isoformat()!r}, {fast}",
                "exact_deferred": f"tables={invoices!r}, exact_at={p.isoformat()!r}, "
                f"deferrable=True, {fast}",
                "group_exact": f"tables=[{invoices!r}, {lines!r}], exact_at={p.isoformat()!r}, "
                f"{fast}",
                "complete": f"tables={lines!r}, complete_as_of={p.isoformat()!r}, {fast}",
                "fresh": f"tables={lines!r}, max_age=3600, {fast}",
            },
        ),
    )
    run = module.dag.test()
    assert set(states(run).values()) == {"success"}, states(run)
    claims = Claims.from_dict(xcom(run, "group_exact")["claims"])
    assert claims.exact_as_of == p
    assert {region.table for region in claims.regions} == {invoices, lines}


def test_claims_sensor_fails_or_skips_when_claims_are_not_met_in_time(
    airflow_home: Path, tmp_path: Path, receiver: tuple[str, DoganaHook]
) -> None:
    conn_id, hook = receiver
    uid = uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    p = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    deliver_full(hook.receiver, table, tmp_path, p)
    later = (p + timedelta(hours=1)).isoformat()
    wait = "poke_interval=0.3, timeout=1.5"
    module = write_dag(
        airflow_home,
        f"sensors_unmet_{uid}",
        sensor_dag(
            f"sensors_unmet_{uid}",
            conn_id,
            {
                "poke_fails": f"tables={table!r}, complete_as_of={later!r}, {wait}",
                "poke_soft": f"tables={table!r}, exact_at={later!r}, soft_fail=True, {wait}",
                "stale_fails": f"tables={table!r}, max_age=timedelta(hours=1), {wait}",
                "deferred_fails": f"tables={table!r}, complete_as_of={later!r}, "
                f"deferrable=True, {wait}",
                "deferred_soft": f"tables={table!r}, exact_at={later!r}, deferrable=True, "
                f"soft_fail=True, {wait}",
            },
        ).replace("\nwith dag:", "\nfrom datetime import timedelta\n\nwith dag:"),
    )
    run = module.dag.test()
    assert states(run) == {
        "poke_fails": "failed",
        "poke_soft": "skipped",
        "stale_fails": "failed",
        "deferred_fails": "failed",
        "deferred_soft": "skipped",
    }


def started(dag_id: str) -> bool:
    """Whether a task of the DAG has started (it keeps its start date while deferred)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        query = select(TaskInstance.start_date).where(TaskInstance.dag_id == dag_id)
        return any(start is not None for start in session.scalars(query).all())


def deliver_once_running(
    dag_id: str, receiver: Receiver, table: str, folder: Path, produced_at: datetime
) -> None:
    """Publish once the sensor task runs and has poked (and, deferrable, deferred) once."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not started(dag_id):
        time.sleep(0.1)
    time.sleep(1.5)
    deliver_full(receiver, table, folder, produced_at)


@pytest.mark.parametrize("deferrable", [False, True], ids=["poke", "deferred"])
def test_claims_sensor_waits_until_a_publication_meets_the_claims(
    airflow_home: Path, tmp_path: Path, receiver: tuple[str, DoganaHook], deferrable: bool
) -> None:
    """Not even registered when the sensor starts; a delivery published while it waits (poking,
    or deferred to ClaimsTrigger) meets it, and the task succeeds with the claims that met it."""
    conn_id, hook = receiver
    uid = uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    # The receiver knows another table; this one is registered by the delivery it awaits.
    hook.receiver.register(orders_contract(f"other_{uid}"))
    p = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    module = write_dag(
        airflow_home,
        f"sensor_waits_{uid}",
        sensor_dag(
            f"sensor_waits_{uid}",
            conn_id,
            {
                "wait": f"tables={table!r}, exact_at={p.isoformat()!r}, deferrable={deferrable}, "
                "poke_interval=0.3, timeout=60"
            },
        ),
    )

    def direct() -> sqlite3.Connection:
        return sqlite3.connect(tmp_path / "r.db", timeout=30)

    started(f"sensor_waits_{uid}")  # import Airflow's models here: two importers deadlock
    later = threading.Thread(
        target=deliver_once_running,
        # Not through the connection: Airflow's in-process task runner serves one caller.
        args=(f"sensor_waits_{uid}", Receiver(direct, SQLITE), table, tmp_path, p),
    )
    later.start()
    try:
        run = module.dag.test()
    finally:
        later.join()
    assert states(run) == {"wait": "success"}
    pushed = xcom(run, "wait")
    assert Claims.from_dict(pushed["claims"]).exact_as_of == p
    # Poked or resumed from the trigger's event, the same plain dates.
    assert (pushed["tables"], pushed["state"], pushed["exact_as_of"]) == (
        [table],
        "complete",
        p.isoformat(),
    )


def test_a_template_reads_the_sensors_dates_as_iso_strings(
    airflow_home: Path, tmp_path: Path, receiver: tuple[str, DoganaHook]
) -> None:
    conn_id, hook = receiver
    uid = uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    p = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    deliver_full(hook.receiver, table, tmp_path, p)
    module = write_dag(
        airflow_home,
        f"sensor_jinja_{uid}",
        f"""
        from airflow.providers.standard.operators.bash import BashOperator
        from dogana_provider.sensors.claims import ClaimsSensor

        with dag:
            wait = ClaimsSensor(task_id="wait", receiver_conn_id={conn_id!r}, tables={table!r},
                                exact_at={p.isoformat()!r}, poke_interval=0.2, timeout=30)
            wait >> BashOperator(
                task_id="report",
                bash_command="echo {{{{ ti.xcom_pull('wait')['exact_as_of'] }}}}",
            )
        """,
    )
    run = module.dag.test()
    assert states(run) == {"wait": "success", "report": "success"}
    assert xcom(run, "report") == p.isoformat()


@pytest.mark.parametrize("default", [False, True])
def test_the_sensor_defers_by_default_as_operators_default_deferrable_says(
    monkeypatch: pytest.MonkeyPatch, default: bool
) -> None:
    from dogana_provider.sensors.claims import ClaimsSensor

    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", str(default))
    assert ClaimsSensor(task_id="wait", tables="orders", max_age=60).deferrable is default
    given = ClaimsSensor(task_id="given", tables="orders", max_age=60, deferrable=not default)
    assert given.deferrable is not default


def test_a_receiver_that_never_registered_a_table_is_awaited_in_both_modes(
    airflow_home: Path, receiver: tuple[str, DoganaHook]
) -> None:
    """A fresh receiver database has not even its own tables yet: the sensor waits, in both
    modes, until its timeout (here a soft fail), instead of failing on a database error."""
    conn_id, _ = receiver
    uid = uuid.uuid4().hex[:8]
    at = datetime.now(UTC).isoformat()
    wait = f"tables='orders', exact_at={at!r}, soft_fail=True, poke_interval=0.3, timeout=1"
    module = write_dag(
        airflow_home,
        f"sensors_fresh_{uid}",
        sensor_dag(
            f"sensors_fresh_{uid}",
            conn_id,
            {"poke": wait, "deferred": f"{wait}, deferrable=True"},
        ),
    )
    run = module.dag.test()
    assert states(run) == {"poke": "skipped", "deferred": "skipped"}
