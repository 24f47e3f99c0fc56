"""A test's DAGs around one table, parcels, in the examples' receiver:

dogana_test_parcels           plan -> extract -> gate -> publish, its Asset the outlet
dogana_test_wait_parcels      a deferrable ClaimsSensor waiting, in the triggerer, until
                              parcels is complete as of the run's end
dogana_test_parcels_consumer  scheduled on the parcels Asset: returns the claims each
                              triggering event carries
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task

from dogana_core import Contract, Shape
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator, dogana_asset
from dogana_provider.sensors.claims import ClaimsSensor

SOURCE_CONN_ID = "dogana_test_source"
RECEIVER_CONN_ID = "dogana_default"
PARCELS = Contract("parcels", ("id",), {"full": Shape.complete()}, types={"id": "int"})
ASSET = dogana_asset("parcels", RECEIVER_CONN_ID)
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

with DAG("dogana_test_parcels", schedule=None, start_date=START, catchup=False) as parcels:
    (
        PlanDeliveryOperator(
            task_id="plan", contract=PARCELS, receiver_conn_id=RECEIVER_CONN_ID, fresh_as_of=RUN_END
        )
        >> ExtractOperator(task_id="extract", source_conn_id=SOURCE_CONN_ID, contract=PARCELS)
        >> GateOperator(task_id="gate", receiver_conn_id=RECEIVER_CONN_ID)
        >> PublishOperator(task_id="publish", receiver_conn_id=RECEIVER_CONN_ID, table="parcels")
    )

with DAG("dogana_test_wait_parcels", schedule=None, start_date=START, catchup=False) as wait:
    ClaimsSensor(
        task_id="wait",
        tables="parcels",
        receiver_conn_id=RECEIVER_CONN_ID,
        complete_as_of=RUN_END,
        deferrable=True,
        poke_interval=1,
        timeout=300,
    )

with DAG(
    "dogana_test_parcels_consumer", schedule=[ASSET], start_date=START, catchup=False
) as consumer:

    @task
    def claims(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
        """The extra of every event of the parcels Asset that triggered this run."""
        return [dict(event.extra) for event in triggering_asset_events[ASSET]]

    claims()
