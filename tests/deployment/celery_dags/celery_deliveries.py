"""Deliveries under CeleryExecutor, each task pinned to a worker by its queue.

Two workers, each with a temporary directory no other sees (test_celery.py): ``configured``,
whose [dogana] delivery_folder is a folder both workers see, and ``unconfigured``, left at the
default (dogana in its own temporary directory). Each DAG extracts on one worker and gates on
the other: through the configured folder the delivery crosses; from the default one it cannot,
and the gate says which setting to change.
"""

from __future__ import annotations

from datetime import UTC, datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator


def delivery(dag_id: str, table: str, extract_on: str, gate_on: str) -> DAG:
    """plan and extract on the worker of queue extract_on, gate on gate_on's, publish on
    extract_on's (whose configuration names the folder it removes published files from)."""
    contract = Contract(table, ("id",), {"full": Shape.complete(cost=1)}, types={"id": "int"})
    receiver = "celery_receiver"
    with DAG(
        dag_id,
        schedule=None,
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        default_args={"retries": 0},
    ) as dag:
        plan = PlanDeliveryOperator(
            task_id="plan", contract=contract, receiver_conn_id=receiver, queue=extract_on
        )
        extract = ExtractOperator(
            task_id="extract", source_conn_id="celery_source", contract=contract, queue=extract_on
        )
        gate = GateOperator(task_id="gate", receiver_conn_id=receiver, queue=gate_on)
        publish = PublishOperator(
            task_id="publish", receiver_conn_id=receiver, table=table, queue=extract_on
        )
        plan >> extract >> gate >> publish
    return dag


configured_folder = delivery(
    "dogana_celery_configured_folder", "orders", extract_on="configured", gate_on="unconfigured"
)
default_folder = delivery(
    "dogana_celery_default_folder", "customers", extract_on="unconfigured", gate_on="configured"
)
