"""The smallest dogana DAG: the customers table, read whole every day into the warehouse.

Connections: dogana_source (where the table is) and dogana_default (the warehouse), e.g.
AIRFLOW_CONN_DOGANA_SOURCE='postgresql://reader@db:5432/shop' (the [postgres] extra) and
AIRFLOW_CONN_DOGANA_DEFAULT='{"conn_type": "sqlite", "host": "/data/warehouse.db"}'.
"""

from datetime import UTC, datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

# What the source guarantees: a full read of the table, keyed by customer_id.
CUSTOMERS = Contract(
    "customers", ("customer_id",), {"full": Shape.complete()}, types={"customer_id": "int"}
)

with DAG(
    "dogana_quickstart", schedule="@daily", start_date=datetime(2026, 1, 1, tzinfo=UTC)
) as dag:
    (
        PlanDeliveryOperator(task_id="plan", contract=CUSTOMERS)
        >> ExtractOperator(task_id="extract", source_conn_id="dogana_source", contract=CUSTOMERS)
        >> GateOperator(task_id="gate")
        >> PublishOperator(task_id="publish", table="customers")
    )
