"""Log capture and one-task deliveries under the real scheduler (test_log_capture.py).

    dogana_test_pg_log      a PostgreSQL table's log (pg_logical), the four tasks
    dogana_test_maria_log   a MariaDB table's binlog (mariadb_binlog), the four tasks
    dogana_test_deliver     DeliverOperator, @daily with catch-up, two readers in one snapshot

Every connection is kept in the metadata database (the test adds them through the REST API);
the source tables, the slot and the receivers' schemas are named after DOGANA_TEST_RUN, the
session's own suffix (conftest.py), so that sessions sharing the servers never meet.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.operators.deliver import DeliverOperator
from dogana_provider.task_groups.delivery import delivery_task_group

RUN = os.environ.get("DOGANA_TEST_RUN", "parse")
PG_SOURCE, MARIA_SOURCE = "dogana_test_pg_source", "dogana_test_maria_source"
DELIVER_SOURCE = "dogana_test_deliver_source"
PG_TABLE, MARIA_TABLE = f"sched_pg_log_{RUN}", f"sched_maria_log_{RUN}"
DELIVERED = f"sched_deliver_{RUN}"
SLOT = f"dogana_sched_{RUN}"
COLUMNS = {"id": "int", "amount": "decimal(12,2)", "name": "str"}
START = datetime(2024, 1, 1, tzinfo=UTC)


def receiver(dag_id: str) -> str:
    """The connection id of the DAG's receiver, a schema or database of its own."""
    return f"{dag_id}_receiver"


def log_contract(table: str) -> Contract:
    """The table whole once, issuing the log's position, then the log with tombstones."""
    return Contract(
        table,
        ("id",),
        {
            "snapshot": Shape.complete(cost=100),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )


with DAG("dogana_test_pg_log", schedule=None, start_date=START, max_active_runs=1):
    delivery_task_group(
        log_contract(PG_TABLE),
        receiver_conn_id=receiver("dogana_test_pg_log"),
        extract={
            "connector": {
                "kind": "pg_logical",
                "conn_id": PG_SOURCE,
                "table": PG_TABLE,
                "slot": SLOT,
                "columns": COLUMNS,
            }
        },
    )

with DAG("dogana_test_maria_log", schedule=None, start_date=START, max_active_runs=1):
    delivery_task_group(
        log_contract(MARIA_TABLE),
        receiver_conn_id=receiver("dogana_test_maria_log"),
        extract={
            "connector": {
                "kind": "mariadb_binlog",
                "conn_id": MARIA_SOURCE,
                "table": MARIA_TABLE,
                "columns": COLUMNS,
            }
        },
    )

# Catch-up from two days back: unpaused, the scheduler creates the missed runs at once.
TWO_DAYS_AGO = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
    days=2
)
with DAG("dogana_test_deliver", schedule="@daily", start_date=TWO_DAYS_AGO, catchup=True):
    DeliverOperator(
        task_id="deliver",
        contract=Contract(DELIVERED, ("id",), {"full": Shape.complete()}, types={"id": "int"}),
        source_conn_id=DELIVER_SOURCE,
        receiver_conn_id=receiver("dogana_test_deliver"),
        extract={"readers": 2},
    )
