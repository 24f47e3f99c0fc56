"""A delivery superseded by another run's publication (operators/superseded.py), by dag.test().

Two runs deliver one table at once: the other run reads later and publishes first, so this
run's read is late for the ledger and refused. When the other's publication meets what this
run asked, the refusal is recorded and the run ends skipped, not failed; when nothing states
what the run asked, it stays a failed rejection. A group read together is superseded the same
way when the other run's group publication covers every table, and fails when it covers only one.
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


def group_racing(
    conn_id: str, sources: dict[str, tuple[str, str]], folder: Path, at: str, other: str
) -> str:
    """A group planned, read in one snapshot, gated and published, with another run publishing
    before ``at`` (the gate or the publish): the whole group when ``other`` is "group", only
    the group's first table when it is "first", each table alone, read at its own instant, when
    it is "each"."""
    order = (
        "delivered >> other >> gate >> publish"
        if at == "gate"
        else "delivered >> gate >> other >> publish"
    )
    paths = [contract for contract, _ in sources.values()]
    alone = [
        f"delivery_dags.publish_meanwhile({request}, *{sources!r}[{request}['table']], "
        f"{str(folder)!r}, {conn_id!r})"
        for request in ("requests[0]", "requests[1]")
    ]
    meanwhile = {
        "group": f"delivery_dags.publish_group_meanwhile(requests, {sources!r}, "
        f"{str(folder)!r}, {conn_id!r})",
        "first": alone[0],
        "each": f"[{alone[0]}, {alone[1]}]",
    }[other]
    return f"""
        import delivery_dags
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            planned = PlanDeliveryOperator(
                task_id="plan", group={paths!r}, receiver_conn_id={conn_id!r}
            )

            @task
            def extract(requests):
                return delivery_dags.extract_group(requests, {sources!r}, {str(folder)!r})

            @task
            def other_run(requests):
                return {meanwhile}

            delivered = extract(planned.output)
            other = other_run(planned.output)
            gate = GateOperator(task_id="gate", receiver_conn_id={conn_id!r}, delivery=delivered)
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={conn_id!r}, decision=gate.output
            )
            {order}
        """


def group_setup(tmp_path: Path) -> tuple[tuple[str, str], dict[str, tuple[str, str]]]:
    """Invoices and their lines, each with a row in its source."""
    uid = uuid.uuid4().hex[:8]
    tables = (f"invoices_{uid}", f"lines_{uid}")
    sources: dict[str, tuple[str, str]] = {}
    for table in tables:
        contract = tmp_path / f"{table}.contract.json"
        contract.write_text(orders_contract(table).to_json(), encoding="utf-8")
        source = Source(tmp_path / f"{table}.source.json")
        source.put(1, f"{table} one")
        sources[table] = (str(contract), str(source.path))
    return tables, sources


@pytest.mark.parametrize("at", ["gate", "publish"])
def test_a_group_another_runs_group_publication_supersedes_is_recorded_and_its_run_skipped(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection, at: str
) -> None:
    conn_id = receiver_connection.conn_id
    tables, sources = group_setup(tmp_path)
    body = group_racing(conn_id, sources, tmp_path, at, "group")
    run = write_dag(airflow_home, f"group_superseded_{at}_{uuid.uuid4().hex[:8]}", body).dag.test()
    assert states(run) == {
        "plan": "success",
        "extract": "success",
        "other_run": "success",
        "gate": "skipped" if at == "gate" else "success",
        "publish": "skipped",
    }
    assert [item["requirement"]["table"] for item in xcom(run, "plan", REQUIREMENT)] == list(tables)
    hook = DoganaHook(conn_id)
    others = xcom(run, "other_run")
    for table in tables:
        first, refused = hook.receiver.receipts(table)
        assert first.outcome is Outcome.ACCEPTED and first.publication_id == others[table]
        assert refused.outcome is Outcome.REJECTED
        assert {check.name for check in refused.failed} <= {"transition", "together"}
        verified = hook.receiver.verify(table)
        assert (verified.publications, verified.head) == (1, first.publication_id)


@pytest.mark.parametrize("other", ["first", "each"])
def test_a_group_another_run_does_not_make_exact_together_is_still_a_failed_rejection(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection, other: str
) -> None:
    """The other run published the invoices alone ("first": the lines' requirement is not met),
    or each table alone at its own instant ("each": each table is exact, but not both at one
    instant, which is what the group asked): the group's refusal fails the gate."""
    conn_id = receiver_connection.conn_id
    (invoices, lines), sources = group_setup(tmp_path)
    body = group_racing(conn_id, sources, tmp_path, "gate", other)
    run = write_dag(airflow_home, f"group_late_{uuid.uuid4().hex[:8]}", body).dag.test()
    assert states(run) == {
        "plan": "success",
        "extract": "success",
        "other_run": "success",
        "gate": "failed",
        "publish": "upstream_failed",
    }
    hook = DoganaHook(conn_id)
    first, refused = hook.receiver.receipts(invoices)
    assert first.outcome is Outcome.ACCEPTED and refused.outcome is Outcome.REJECTED
    assert "transition" in {check.name for check in refused.failed}
    *before, sibling = hook.receiver.receipts(lines)
    assert sibling.outcome is Outcome.REJECTED
    assert hook.receiver.verify(lines).publications == len(before) == (other == "each")
