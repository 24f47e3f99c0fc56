"""Log capture and one-task deliveries under the real scheduler (test_log_capture.py).

    dogana_test_pg_log      a PostgreSQL table's log (pg_logical), the four tasks
    dogana_test_maria_log   a MariaDB table's binlog (mariadb_binlog), the four tasks
    dogana_test_pg_group    two PostgreSQL tables read from one slot and published together
    dogana_test_pg_stale    a PostgreSQL table's log, two runs at once, its extract and gate in
                            pools the test resizes to hold each at the moment it wants
    dogana_test_deliver     DeliverOperator, @daily with catch-up, two readers in one snapshot

Every connection is kept in the metadata database (the test adds them through the REST API),
and so are the pools; the source tables, the slots and the receivers' schemas are named after
DOGANA_TEST_RUN, the session's own suffix (conftest.py), so that sessions sharing the servers
never meet.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, TaskGroup

from dogana_core import Contract, Shape
from dogana_provider.operators.deliver import DeliverOperator
from dogana_provider.task_groups.delivery import delivery_task_group

RUN = os.environ.get("DOGANA_TEST_RUN", "parse")
PG_SOURCE, MARIA_SOURCE = "dogana_test_pg_source", "dogana_test_maria_source"
DELIVER_SOURCE = "dogana_test_deliver_source"
PG_TABLE, MARIA_TABLE = f"sched_pg_log_{RUN}", f"sched_maria_log_{RUN}"
GROUP_TABLES = [f"sched_pg_group_a_{RUN}", f"sched_pg_group_b_{RUN}"]
GROUP_ID = "both"
STALE_TABLE = f"sched_pg_stale_{RUN}"
STALE_POOLS = {"extract": "dogana_test_stale_extract", "gate": "dogana_test_stale_gate"}
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


def log_pipeline(
    dag_id: str, connector: dict[str, Any], *, max_active_runs: int = 1, **extract: Any
) -> TaskGroup:
    """A manual DAG delivering the connector's table, or its group of tables (one task group,
    GROUP_ID), from the log into the DAG's receiver; extract holds ExtractOperator's own
    arguments beside the connector."""
    tables = connector.get("tables") or [connector["table"]]
    contracts = [log_contract(table) for table in tables]
    one = {"contract": contracts[0]} if len(contracts) == 1 else {"group": contracts}
    with DAG(dag_id, schedule=None, start_date=START, max_active_runs=max_active_runs):
        return delivery_task_group(
            **one,
            group_id=None if len(contracts) == 1 else GROUP_ID,
            receiver_conn_id=receiver(dag_id),
            extract={"connector": connector, **extract},
        )


def pg_logical(conn_id: str, slot: str, *tables: str) -> dict[str, Any]:
    """A pg_logical connector over one table, or over a group of tables behind one slot."""
    found = {"kind": "pg_logical", "conn_id": conn_id, "slot": slot}
    if len(tables) == 1:
        return {**found, "table": tables[0], "columns": COLUMNS}
    return {**found, "tables": list(tables), "columns": dict.fromkeys(tables, COLUMNS)}


log_pipeline("dogana_test_pg_log", pg_logical(PG_SOURCE, SLOT, PG_TABLE))
log_pipeline(
    "dogana_test_maria_log",
    {"kind": "mariadb_binlog", "conn_id": MARIA_SOURCE, "table": MARIA_TABLE, "columns": COLUMNS},
)
log_pipeline(
    "dogana_test_pg_group",
    pg_logical("dogana_test_pg_group_source", f"dogana_sched_group_{RUN}", *GROUP_TABLES),
)
stale = log_pipeline(
    "dogana_test_pg_stale",
    pg_logical("dogana_test_pg_stale_source", f"dogana_sched_stale_{RUN}", STALE_TABLE),
    max_active_runs=2,
    pool=STALE_POOLS["extract"],
)
# delivery_task_group gives extract alone arguments of its own: the gate's pool is set on it.
stale["gate"].pool = STALE_POOLS["gate"]

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
