"""Every file in dags/examples/ parses in a DagBag as Airflow's DAG processor would parse it, with
no connection set: a DAG author copies it as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from example_runs import EXAMPLES

pytestmark = pytest.mark.airflow

# dags/examples/warehouse.py: one DAG per file of dags/examples/contracts/
WAREHOUSE = (
    "audit_log",
    "billing",
    "customers",
    "orders",
    "page_views",
    "payments",
    "products",
    "regions",
    "stock_levels",
    "suppliers",
)
DAG_IDS = {
    *(f"warehouse_{name}" for name in WAREHOUSE),
    "dogana_orders_daily",
    "dogana_orders_weekly_full",
    "dogana_events_hourly",
    "dogana_invoices",
    "dogana_shipments_window",
    "dogana_freshness",
    "dogana_activate_source",
    "dogana_web_orders",
    "dogana_api_orders",
}


def test_every_example_parses_without_errors_and_is_documented(airflow_home: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(EXAMPLES))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == DAG_IDS
    for dag_id in DAG_IDS:
        dag = bag.get_dag(dag_id)
        assert dag is not None and dag.doc_md, f"{dag_id}: no doc for the UI"
        assert not dag.catchup and "dogana" in dag.tags


def test_connection_ids_come_from_the_environment(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("DOGANA_SOURCE_CONN_ID", "shop_db")
    monkeypatch.setenv("DOGANA_RECEIVER_CONN_ID", "warehouse")
    bag = DagBag(dag_folder=str(EXAMPLES))
    assert bag.import_errors == {}
    seen = set()
    for dag_id in DAG_IDS:
        dag = bag.get_dag(dag_id)
        assert dag is not None
        for task in dag.tasks:
            for attribute, expected in (
                ("source_conn_id", "shop_db"),
                ("receiver_conn_id", "warehouse"),
            ):
                # A connector's extract has no source_conn_id: it reads a file, not a database.
                if getattr(task, attribute, None) is not None:
                    assert getattr(task, attribute) == expected, f"{dag_id}.{task.task_id}"
                    seen.add(attribute)
    assert seen == {"source_conn_id", "receiver_conn_id"}
