"""ActivateSourceOperator: a person activates a table from a run they triggered, recorded as
themselves; an account, the worker's own or a run nobody triggered cannot. The receiver's rules
themselves run on every database in tests/receiver (activation_conformance.py); these runs use
a SQLite receiver."""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowFailException
from delivery_dags import sqlite_connection, states, write_dag, xcom

from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.activate import expiry, who_activates
from dogana_provider.receiver.activation import Status

pytestmark = pytest.mark.airflow

CONF = {
    "table": "orders",
    "owner": "Bea Owner",
    "authorized_by": "Carla Grantor",
    "expires": "30d",
    "licence": "internal-use-only",
    "purposes": ["billing", "finance reporting"],
    "provenance": "nightly read of the ERP replica",
    "activated_by": "Ada Steward",
}

BODY = """
    from dogana_provider.operators.activate import ActivateSourceOperator

    with dag:
        ActivateSourceOperator(
            task_id="activate",
            receiver_conn_id={conn_id!r},{more}
            table="{{{{ dag_run.conf['table'] }}}}",
            data_owner="{{{{ dag_run.conf['owner'] }}}}",
            authorized_by="{{{{ dag_run.conf['authorized_by'] }}}}",
            expires="{{{{ dag_run.conf['expires'] }}}}",
            licence="{{{{ dag_run.conf['licence'] }}}}",
            purposes="{{{{ dag_run.conf['purposes'] | tojson }}}}",
            provenance="{{{{ dag_run.conf['provenance'] }}}}",
            activated_by="{{{{ dag_run.conf['activated_by'] }}}}",
        )
"""


@pytest.fixture
def activate(airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A DAG of one ActivateSourceOperator on a SQLite receiver, its conf the form's values."""
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    module = write_dag(airflow_home, f"activate_{conn_id}", BODY.format(conn_id=conn_id, more=""))
    module.hook = DoganaHook(conn_id)
    return module


CONFORMANCE = """
            conformance="{{ dag_run.conf['source'] | tojson }}","""


@pytest.fixture
def vouch(airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """activate, its source (conf "source", a connector's configuration) checked first."""
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    body = BODY.format(conn_id=conn_id, more=CONFORMANCE)
    module = write_dag(airflow_home, f"vouch_{conn_id}", body)
    module.hook = DoganaHook(conn_id)
    return module


def jsonl_orders(folder: Path, rows: int) -> dict[str, Any]:
    """A JSON Lines change log of orders, and its connector's configuration."""
    path = folder / "orders.jsonl"
    path.write_text(
        "".join(
            json.dumps({"order_id": n, "amount": n * 1.5, "_op": "c"}) + "\n"
            for n in range(1, rows + 1)
        )
    )
    columns = {"order_id": "int", "amount": "float", "_op": "str"}
    return {
        "kind": "jsonl",
        "path": str(path),
        "key": ["order_id"],
        "columns": columns,
        "whole_history": True,
    }


def sqlite_orders(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A SQLite table of orders behind a connection, and its connector's configuration."""
    path, conn_id = folder / "shop.sqlite", f"shop_{uuid.uuid4().hex[:8]}"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, amount REAL)")
        connection.executemany(
            "INSERT INTO orders VALUES (?, ?)", [(n, n * 1.5) for n in (1, 2, 3, 4)]
        )
    connection.close()
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(path))
    return {
        "kind": "sql",
        "conn_id": conn_id,
        "tables": ["orders"],
        "key": {"orders": ["order_id"]},
    }


def test_a_person_activates_a_table_from_a_run_recorded_as_themselves(activate: Any) -> None:
    before = datetime.now(UTC)
    run = activate.dag.test(run_conf=CONF)
    assert states(run) == {"activate": "success"}
    state = activate.hook.receiver.sources.state("orders")
    assert state.status is Status.ACTIVE
    assert state.record is not None and state.record.purposes == ("billing", "finance reporting")
    assert state.expires_at is not None
    assert before + timedelta(days=30) <= state.expires_at <= datetime.now(UTC) + timedelta(days=30)
    (logged,) = activate.hook.receiver.sources.log("orders")
    assert (logged.event, logged.actor) == ("activated", "Ada Steward")
    assert logged.detail["origin"]["run_id"] == run.run_id
    assert xcom(run, "activate")["line"].startswith("not required (active until ")


@pytest.mark.parametrize("who", ["svc_airflow", "System", "automation"])
def test_an_account_named_as_who_activates_fails_the_task_and_records_nothing(
    activate: Any, who: str
) -> None:
    run = activate.dag.test(run_conf={**CONF, "activated_by": who})
    assert states(run) == {"activate": "failed"}
    assert activate.hook.receiver.sources.log("orders") == []


def test_an_activation_missing_a_part_fails_the_task_naming_it(
    activate: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    run = activate.dag.test(run_conf={**CONF, "licence": " "})
    assert states(run) == {"activate": "failed"}
    assert "table 'orders' cannot be activated: missing a licence" in capfd.readouterr().out
    assert activate.hook.receiver.sources.log("orders") == []


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_source_passing_the_conformance_suite_is_activated_with_its_report_recorded(
    vouch: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    source = jsonl_orders(tmp_path, 4) if kind == "jsonl" else sqlite_orders(tmp_path, monkeypatch)
    run = vouch.dag.test(run_conf={**CONF, "source": source})
    assert states(run) == {"activate": "success"}
    assert vouch.hook.receiver.sources.state("orders").status is Status.ACTIVE
    (logged,) = vouch.hook.receiver.sources.log("orders")
    report = logged.detail["conformance"]
    assert (report["connector"], report["stream"], report["failed"]) == (
        source["kind"],
        "orders",
        [],
    )
    assert {"read_honours_limit", "checkpoint_resume_exact"} <= set(report["passed"])
    assert len(report["passed"]) == 17


def test_a_failed_conformance_check_refuses_activation_naming_it_and_records_nothing(
    vouch: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Two lines: too few for the limit and resume checks, which fail rather than skip.
    run = vouch.dag.test(run_conf={**CONF, "source": jsonl_orders(tmp_path, 2)})
    assert states(run) == {"activate": "failed"}
    out = capfd.readouterr().out
    assert "cannot be activated: missing a source passing the connector conformance suite" in out
    assert "read_yields_arrow_batches" in out.split("(failed: ", 1)[1]
    assert vouch.hook.receiver.sources.log("orders") == []


# Who an activation from a run is recorded as: the rules on their own --------------------------


def test_only_a_run_a_person_triggered_may_activate() -> None:
    for run_type in ("scheduled", "asset_triggered", "backfill"):
        with pytest.raises(AirflowFailException, match="the DAG authorizing its own source"):
            who_activates(run_type, "jdoe", "Jane Doe", "airflow-worker")
    assert who_activates("manual", "jdoe", "Jane Doe", "airflow-worker") == "Jane Doe"


def test_the_account_the_worker_runs_as_cannot_activate() -> None:
    with pytest.raises(AirflowFailException, match="the account the worker runs as"):
        who_activates("manual", None, "jdoe", "JDoe")


def test_without_activated_by_the_person_who_triggered_the_run_is_recorded() -> None:
    assert who_activates("manual", "Jane Doe", None, "worker") == "Jane Doe"
    with pytest.raises(AirflowFailException, match="the user who triggered the run: a named"):
        who_activates("manual", "admin", None, "worker")  # an account triggered it: name yourself
    with pytest.raises(AirflowFailException, match="a named person records an activation"):
        who_activates("manual", None, None, "worker")


def test_expires_is_an_instant_or_a_duration_from_now_never_none() -> None:
    now = datetime(2026, 11, 1, tzinfo=UTC)
    assert expiry("2027-01-01T00:00:00+00:00", now) == datetime(2027, 1, 1, tzinfo=UTC)
    assert expiry("365d", now) == now + timedelta(days=365)
    assert expiry(timedelta(hours=2), now) == now + timedelta(hours=2)
    for never in ("none", "next year"):
        with pytest.raises(ValueError, match="neither an ISO 8601 instant"):
            expiry(never, now)
