"""A test's DAG: one pipeline mapped over eight tables, every task mapped with .expand.

The eight plan tasks register their contracts at once, in the receiver named by the run's conf
({"receiver": conn_id}); the tests give it an empty one, so that the receiver's own tables are
created by whichever task comes first while the others do the same.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

SOURCE_CONN_ID = "dogana_test_source"
TABLES = [f"item{i}" for i in range(8)]
CONTRACTS = {
    table: Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"}).to_dict()
    for table in TABLES
}


def with_contract(request: dict) -> dict:
    """The extract task's arguments for one planned request: it and its table's contract."""
    return {"request": request, "contract": CONTRACTS[request["table"]]}


with DAG(
    "dogana_test_mapped",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
    tags=["dogana", "test"],
) as dag:
    receiver = "{{ dag_run.conf['receiver'] }}"
    plan = PlanDeliveryOperator.partial(task_id="plan", receiver_conn_id=receiver).expand(
        contract=list(CONTRACTS.values())
    )
    extract = ExtractOperator.partial(
        task_id="extract", source_conn_id=SOURCE_CONN_ID
    ).expand_kwargs(plan.output.map(with_contract))
    gate = GateOperator.partial(task_id="gate", receiver_conn_id=receiver).expand(
        delivery=extract.output
    )
    # No outlets: a mapped publish's instances must still build their context (the default
    # that .partial() records is an empty list of outlets, never None).
    PublishOperator.partial(task_id="publish", receiver_conn_id=receiver).expand(
        decision=gate.output
    )
