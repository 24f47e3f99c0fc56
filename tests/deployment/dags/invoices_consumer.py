"""A test's DAG scheduled on both Assets the invoices example publishes with one task (two
outlets): returns, for each Asset, the extras of the events that triggered the run."""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task

from dogana_provider.operators.publish import dogana_asset

ASSETS = [dogana_asset(table, "dogana_default") for table in ("invoices", "invoice_lines")]

with DAG(
    "dogana_test_invoices_consumer",
    schedule=ASSETS,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
) as dag:

    @task
    def claims(triggering_asset_events: Any = None) -> dict[str, list[dict[str, Any]]]:
        """{Asset URI: [the extra of each of its events that triggered this run]}."""
        return {
            asset.uri: [dict(event.extra) for event in triggering_asset_events[asset]]
            for asset in ASSETS
        }

    claims()
