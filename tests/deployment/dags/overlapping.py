"""The test DAGs of overlapping runs and of what a release or a discard means later
(test_overlapping_runs.py), in a receiver of their own with no activation: the connection
dogana_test_overlap, which the test adds through the REST API before unpausing them.

dogana_test_catchup     the quickstart's shape, @daily from 2026-01-01: unpaused, its catch-up
                        (latest scheduled) run runs beside a manual one
dogana_test_concurrent  the same, unscheduled: two manual runs at once
dogana_test_released    plan -> extract -> gate -> publish of released_rows, whose gate holds an
                        amount above 1,000,000 for a person

In the first two, a task between gate and publish (in_turn) makes the race the quickstart loses
happen every time rather than now and then: both runs decide before either publishes, and the
run whose read is later publishes first, so the other's publish finds a newer publication.
"""

from __future__ import annotations

import datetime
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from dogana_core import Contract, Receipt, Shape
from dogana_core.claims import NO_LIMIT
from dogana_provider.checks.expectations import Expectations
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

SOURCE_CONN_ID = "dogana_test_source"
RECEIVER_CONN_ID = "dogana_test_overlap"
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
TURNS = Path(tempfile.gettempdir()) / "dogana-test-turns"
"""Where each racing run notes its read's instant; the test empties it before the race."""
HOLD = Expectations.from_dict(
    {
        "checks": {
            "amount_plausible": {"check_statement": "amount <= 1000000", "on_violation": "hold"}
        }
    }
)


def contract(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


@task
def in_turn(decision: dict[str, Any], **context: Any) -> dict[str, Any]:
    """Wait until both racing runs have decided; then the earlier read waits for the later
    one's publication. Hands the decision on to publish."""
    from dogana_provider.hooks.dogana import DoganaHook

    receipt = Receipt.from_dict(decision["receipt"])
    folder = TURNS / context["dag"].dag_id
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / context["run_id"].replace(":", "_").replace("+", "_")
    mine.write_text(receipt.manifest.produced_at.isoformat(), encoding="utf-8")
    deadline = time.monotonic() + 240
    while len(list(folder.iterdir())) < 2:
        if time.monotonic() > deadline:
            raise TimeoutError("the other run never decided")
        time.sleep(0.5)
    later = max(
        datetime.datetime.fromisoformat(path.read_text(encoding="utf-8"))
        for path in folder.iterdir()
    )
    receiver = DoganaHook(RECEIVER_CONN_ID).receiver
    while receipt.manifest.produced_at < later:
        claims = receiver.ledger(receipt.table).claims(
            datetime.datetime.now(datetime.UTC), limit=NO_LIMIT
        )
        if claims.complete_as_of is not None and claims.complete_as_of >= later:
            break
        if time.monotonic() > deadline:
            raise TimeoutError("the later read was never published")
        time.sleep(0.5)
    return decision


def racing(dag_id: str, table: str, schedule: str | None) -> DAG:
    with DAG(dag_id, schedule=schedule, start_date=START, catchup=False) as dag:
        plan = PlanDeliveryOperator(
            task_id="plan", contract=contract(table), receiver_conn_id=RECEIVER_CONN_ID
        )
        extract = ExtractOperator(
            task_id="extract",
            source_conn_id=SOURCE_CONN_ID,
            contract=contract(table),
            source_table="parcels",
        )
        gate = GateOperator(task_id="gate", receiver_conn_id=RECEIVER_CONN_ID)
        turn = in_turn(gate.output)
        publish = PublishOperator(
            task_id="publish", receiver_conn_id=RECEIVER_CONN_ID, table=table, decision=turn
        )
        plan >> extract >> gate >> turn >> publish
    return dag


catchup = racing("dogana_test_catchup", "overlap_catchup", "@daily")
concurrent = racing("dogana_test_concurrent", "overlap_concurrent", None)

with DAG("dogana_test_released", schedule=None, start_date=START, catchup=False) as released:
    (
        PlanDeliveryOperator(
            task_id="plan", contract=contract("released_rows"), receiver_conn_id=RECEIVER_CONN_ID
        )
        >> ExtractOperator(
            task_id="extract", source_conn_id=SOURCE_CONN_ID, contract=contract("released_rows")
        )
        >> GateOperator(task_id="gate", receiver_conn_id=RECEIVER_CONN_ID, expectations=HOLD)
        >> PublishOperator(
            task_id="publish", receiver_conn_id=RECEIVER_CONN_ID, table="released_rows"
        )
    )
