"""The quickstart DAG in its short form: the same four tasks, in a TaskGroup named customers.

Connections: dogana_source (where the table is) and dogana_default (the warehouse).
"""

from datetime import UTC, datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.task_groups.delivery import delivery_task_group

CUSTOMERS = Contract(
    "customers", ("customer_id",), {"full": Shape.complete()}, types={"customer_id": "int"}
)

with DAG(
    "dogana_quickstart_short", schedule="@daily", start_date=datetime(2026, 1, 1, tzinfo=UTC)
) as dag:
    delivery_task_group(CUSTOMERS, source_conn_id="dogana_source")
