"""A delivery superseded by another run's publication (operators/superseded.py), by dag.test().

Two runs deliver one table at once: the other run reads later and publishes first, so this
run's read is late for the ledger and refused. When the other's publication meets what this
run asked, the refusal is recorded and the run ends skipped, not failed; when nothing states
what the run asked, it stays a failed rejection.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from delivery_dags import ReceiverConnection, Source, orders_contract, states, write_dag, xcom

from dogana_core import Outcome
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.superseded import REQUIREMENT

pytestmark = pytest.mark.airflow


def racing(conn_id: str, table: str, contract: Path, source: Source, folder: Path, at: str) -> str:
    """Plan -> extract -> gate -> publish, with the other run publishing before ``at`` (the
    gate or the publish) runs."""
    order = (
        "delivered >> other >> gate >> publish"
        if at == "gate"
        else "delivered >> gate >> other >> publish"
    )
    args = f"{str(contract)!r}, {str(source.path)!r}, {str(folder)!r}"
    return f"""
        import delivery_dags
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            planned = PlanDeliveryOperator(
                task_id="plan", contract={str(contract)!r}, receiver_conn_id={conn_id!r}
            )

            @task
            def extract(request):
                return delivery_dags.extract(request, {args})

            @task
            def other_run(request):
                return delivery_dags.publish_meanwhile(request, {args}, {conn_id!r})

            delivered = extract(planned.output)
            other = other_run(planned.output)
            gate = GateOperator(task_id="gate", receiver_conn_id={conn_id!r}, delivery=delivered)
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={conn_id!r}, table={table!r},
                decision=gate.output,
            )
            {order}
        """


def unplanned(conn_id: str, table: str, contract: Path, source: Source, folder: Path) -> str:
    """No plan task: a read of the whole table handed to the gate, the other run publishing a
    later read first. Nothing states what this delivery was for."""
    args = f"{str(contract)!r}, {str(source.path)!r}, {str(folder)!r}"
    return f"""
        import datetime as dt
        import delivery_dags
        from dogana_core.planner import ExtractionRequest
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            @task
            def extract():
                now = dt.datetime.now(dt.timezone.utc)
                request = ExtractionRequest({table!r}, "full", now).to_dict()
                delivered = delivery_dags.extract(request, {args})
                delivery_dags.publish_meanwhile(request, {args}, {conn_id!r})
                return delivered

            gate = GateOperator(
                task_id="gate", receiver_conn_id={conn_id!r}, contract={str(contract)!r},
                delivery=extract(),
            )
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={conn_id!r}, table={table!r}
            )
            gate >> publish
        """


def setup(tmp_path: Path) -> tuple[str, Path, Source]:
    table = f"orders_{uuid.uuid4().hex[:8]}"
    contract = tmp_path / "orders.contract.json"
    contract.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    return table, contract, source


@pytest.mark.parametrize("at", ["gate", "publish"])
def test_a_delivery_another_runs_publication_supersedes_is_recorded_and_its_run_skipped(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection, at: str
) -> None:
    conn_id = receiver_connection.conn_id
    table, contract, source = setup(tmp_path)
    body = racing(conn_id, table, contract, source, tmp_path, at)
    run = write_dag(airflow_home, f"superseded_{at}_{uuid.uuid4().hex[:8]}", body).dag.test()
    assert states(run) == {
        "plan": "success",
        "extract": "success",
        "other_run": "success",
        "gate": "skipped" if at == "gate" else "success",
        "publish": "skipped",
    }
    assert xcom(run, "plan", REQUIREMENT)["requirement"]["table"] == table
    hook = DoganaHook(conn_id)
    first, refused = hook.receiver.receipts(table)
    assert first.outcome is Outcome.ACCEPTED and first.publication_id == xcom(run, "other_run")
    assert refused.outcome is Outcome.REJECTED
    assert [check.name for check in refused.failed] == ["transition"]
    verified = hook.receiver.verify(table)
    assert (verified.publications, verified.head) == (1, first.publication_id)


def test_a_late_delivery_nothing_planned_is_still_a_failed_rejection(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    conn_id = receiver_connection.conn_id
    table, contract, source = setup(tmp_path)
    body = unplanned(conn_id, table, contract, source, tmp_path)
    run = write_dag(airflow_home, f"late_{uuid.uuid4().hex[:8]}", body).dag.test()
    assert states(run) == {"extract": "success", "gate": "failed", "publish": "upstream_failed"}
    first, refused = DoganaHook(conn_id).receiver.receipts(table)
    assert first.outcome is Outcome.ACCEPTED
    assert refused.outcome is Outcome.REJECTED
    assert [check.name for check in refused.failed] == ["transition"]
