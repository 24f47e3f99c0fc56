"""Warehouse: a folder of contract files, each its own DAG, from one call.

dags/examples/contracts/ holds ten files for eleven tables of one shop database: ODCS v3 data
contracts (*.odcs.yaml) and dogana's own Contract JSON (*.json); keyed tables and keyless
appends, tables read whole and tables read by their changes, and one group (billing.odcs.yaml:
invoices and invoice_lines, read together in one snapshot). Each file becomes the DAG
``warehouse_<file name>``, which plans, extracts, gates and publishes its tables on the
schedule the file states, against the requirement the file states (dogana_provider.contract_files
describes both formats, dogana_core.odcs the ODCS mapping).

A contract file that does not parse, or that declares something dogana cannot prove, becomes no
DAG: Airflow shows an import error for this file naming the contract file, the field and the
rule, and every other contract's DAG still runs.

Configuration: the Airflow connections ``dogana_source`` and ``dogana_default``, or the ids in
DOGANA_SOURCE_CONN_ID and DOGANA_RECEIVER_CONN_ID (see orders.py); the folder in
DOGANA_CONTRACTS_FOLDER, by default the contracts/ folder beside this file.
"""

from __future__ import annotations

import os
from pathlib import Path

from dogana_provider.contract_files import contract_dags

SOURCE_CONN_ID = os.environ.get("DOGANA_SOURCE_CONN_ID", "dogana_source")
RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")
CONTRACTS = os.environ.get("DOGANA_CONTRACTS_FOLDER", str(Path(__file__).parent / "contracts"))

contract_dags(
    CONTRACTS,
    source_conn_id=SOURCE_CONN_ID,
    receiver_conn_id=RECEIVER_CONN_ID,
    dag_id_prefix="warehouse_",
    tags=("dogana", "example"),
)
