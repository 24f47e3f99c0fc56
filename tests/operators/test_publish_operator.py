"""Plan -> extract -> Gate -> Publish, run by dag.test() against a real receiver database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from delivery_dags import (
    ReceiverConnection,
    Source,
    asset_events,
    orders_contract,
    pipeline,
    published,
    states,
    write_dag,
    xcom,
)

from dogana_core import Outcome, Receipt
from dogana_core.claims import NO_LIMIT
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.publish import dogana_asset

pytestmark = pytest.mark.airflow

ALL = ("plan", "extract", "gate", "publish")


def test_deliveries_publish_the_source_and_emit_the_claims(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A full read, then changes with a soft delete: the published rows equal the live source
    at produced_at, the ledger is exact at it, and each Asset event's extra says so."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    module = write_dag(
        airflow_home,
        f"flow_{uid}",
        pipeline(
            conn_id,
            table,
            contract_path,
            source,
            tmp_path,
            plan="fresh_as_of='{{ data_interval_end }}',",
        ),
    )
    hook = DoganaHook(conn_id)

    first = module.dag.test()
    assert states(first) == dict.fromkeys(ALL, "success")
    request = xcom(first, "plan")
    assert request["shape"] == "full"  # nothing is known yet: only a full read can start
    receipt = Receipt.from_dict(xcom(first, "publish"))
    assert receipt.outcome is Outcome.ACCEPTED
    assert published(hook, table) == source.live() == {1: "one", 2: "two"}

    source.put(3, "three")
    source.put(1, "uno")
    source.soft_delete(2)
    second = module.dag.test()
    assert states(second) == dict.fromkeys(ALL, "success")
    assert xcom(second, "plan")["shape"] == "changes"  # cheaper, from the held date
    changes = Receipt.from_dict(xcom(second, "publish"))
    assert changes.manifest.rows == 2 and changes.manifest.tombstones == 1
    assert published(hook, table) == source.live() == {1: "uno", 3: "three"}

    p = changes.manifest.produced_at
    ledger = hook.receiver.ledger(table)
    claims = ledger.claims(p, limit=NO_LIMIT)
    assert (claims.complete_as_of, claims.deletions_as_of, claims.exact_as_of) == (p, p, p)
    assert ledger.publication_id == changes.publication_id
    assert hook.receiver.verify(table).head == changes.publication_id

    asset = dogana_asset(table, conn_id)
    assert asset.uri == f"dogana://{conn_id}/{table}"
    extras = asset_events(asset.uri)
    assert len(extras) == 2
    assert extras[0]["publication_id"] == receipt.publication_id
    assert extras[-1] == {
        "tables": [table],
        "state": "complete",
        "complete_as_of": p.isoformat(),
        "deletions_as_of": p.isoformat(),
        "exact_as_of": p.isoformat(),
        "publication_id": changes.publication_id,
        "window": None,
        "expectations": "none_declared",
    }


def test_an_outlet_naming_a_table_not_published_is_refused_before_publishing(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A publish of orders with the events Asset among its outlets: that event could only carry
    orders' dates, so the task fails naming the outlet, and nothing is published."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table, other = f"orders_{uid}", f"events_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    outlets = f"[dogana_asset({table!r}, {conn_id!r}), dogana_asset({other!r}, {conn_id!r})]"
    module = write_dag(
        airflow_home,
        f"outlets_{uid}",
        pipeline(conn_id, table, contract_path, source, tmp_path, publish=f"outlets={outlets}"),
    )

    run = module.dag.test()

    assert states(run)["publish"] == "failed"
    hook = DoganaHook(conn_id)
    assert hook.receiver.ledger(table).publication_id is None
    assert published(hook, table) == {}
    assert asset_events(dogana_asset(other, conn_id).uri) == []


def test_a_mapped_publish_gives_each_table_its_own_claims(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """One pipeline mapped over two contracts known at run time, publishing through the alias
    dogana_alias: each table's Asset gets one event, carrying its own table and head."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    tables = (f"orders_{uid}", f"events_{uid}")
    deliveries = []
    for number, table in enumerate(tables):
        contract_path = tmp_path / f"{table}.contract.json"
        contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
        source = Source(tmp_path / f"{table}.source.json")
        for id_ in range(number + 1):  # orders one row, events two: their heads differ
            source.put(id_, f"{table} {id_}")
        deliveries.append({"contract_path": str(contract_path), "source_path": str(source.path)})
    module = write_dag(
        airflow_home,
        f"mapped_{uid}",
        f"""
        import delivery_dags
        from airflow.sdk import task_group
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator, dogana_alias

        @task
        def contracts():
            return {deliveries!r}

        @task_group
        def deliver(contract_path, source_path):
            planned = PlanDeliveryOperator(
                task_id="plan", contract=contract_path, receiver_conn_id={conn_id!r}
            )

            @task
            def extract(request, contract_path, source_path):
                return delivery_dags.extract(
                    request, contract_path, source_path, {str(tmp_path)!r}
                )

            gate = GateOperator(
                task_id="gate",
                receiver_conn_id={conn_id!r},
                delivery=extract(planned.output, contract_path, source_path),
            )
            PublishOperator(
                task_id="publish",
                receiver_conn_id={conn_id!r},
                decision=gate.output,
                outlets=[dogana_alias({conn_id!r})],
            )

        with dag:
            deliver.expand_kwargs(contracts())
        """,
    )

    run = module.dag.test()

    assert set(states(run).values()) == {"success"}
    hook = DoganaHook(conn_id)
    for number, table in enumerate(tables):
        [extra] = asset_events(dogana_asset(table, conn_id).uri)
        ledger = hook.receiver.ledger(table)
        p = ledger.claims(datetime.now(UTC), limit=NO_LIMIT).complete_as_of
        assert extra["tables"] == [table]
        assert extra["publication_id"] == ledger.publication_id
        assert extra["complete_as_of"] == p.isoformat()
        assert len(published(hook, table)) == number + 1


def test_a_mapped_publish_without_outlets_has_no_outlets_rather_than_none() -> None:
    """.partial() records PublishOperator's default for outlets as the mapped task's own; None
    there made every mapped instance fail while Airflow built its context, under the real
    scheduler (tests/deployment/dags/mapped.py runs such a publish end to end)."""
    from airflow.sdk import DAG

    from dogana_provider.operators.publish import PublishOperator

    with DAG(f"mapped_no_outlets_{uuid.uuid4().hex[:8]}", schedule=None):
        mapped = PublishOperator.partial(task_id="publish").expand(decision=[{}, {}])

    # A list: Airflow builds a mapped instance's context from inlets + outlets.
    assert mapped.inlets + mapped.outlets == []
