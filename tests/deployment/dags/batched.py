"""The test DAG of many small tables in few tasks (test_batched_runs.py), as docs/operators.md
writes it: DeliverOperator mapped over contracts_in_folder(folder, tasks=2), the folder's
contract files beside this file (batched_contracts/: three tables, and a group of two read
together), @daily, in a receiver and from a source of the test's own: the connections
dogana_test_batched (a PostgreSQL schema) and dogana_test_batched_source (a SQLite file), which
the test adds through the REST API before unpausing it.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from airflow.sdk import DAG

from dogana_provider.contract_files import contracts_in_folder
from dogana_provider.operators.deliver import DeliverOperator
from dogana_provider.operators.publish import dogana_alias

SOURCE_CONN_ID = "dogana_test_batched_source"
RECEIVER_CONN_ID = "dogana_test_batched"
CONTRACTS = Path(__file__).resolve().parent / "batched_contracts"

with DAG(
    "dogana_test_batched",
    schedule="@daily",
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
    tags=["dogana", "test"],
) as dag:
    DeliverOperator.partial(
        task_id="deliver",
        source_conn_id=SOURCE_CONN_ID,
        receiver_conn_id=RECEIVER_CONN_ID,
        outlets=[dogana_alias(RECEIVER_CONN_ID)],
    ).expand(contracts=contracts_in_folder(str(CONTRACTS), tasks=2))
