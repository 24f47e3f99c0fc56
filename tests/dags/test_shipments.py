"""dags/examples/shipments.py: a rolling 30-day window, whole when it moves, changes between."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from example_runs import (
    Databases,
    asset_events,
    load_example,
    local_path,
    now,
    on_one_utc_day,
    redeliver,
    states,
    xcom,
)

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

# delivery_task_group: the four tasks in the TaskGroup named after the table
TASKS = ("shipments.plan", "shipments.extract", "shipments.gate", "shipments.publish")
COLUMNS = ("shipment_id", "ship_date", "weight_g")


def in_window(databases: Databases, low: date) -> set[tuple[object, ...]]:
    rows = databases.source_rows("SELECT shipment_id, ship_date, weight_g FROM shipments")
    return {(i, _date(d), w) for i, d, w in rows if _date(d) >= low}


def published(databases: Databases) -> set[tuple[object, ...]]:
    return {(i, _date(d), w) for i, d, w in databases.published("shipments", COLUMNS)}


def _date(value: object) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def ship(databases: Databases, shipment_id: int, day: date, weight: int, at: datetime) -> None:
    databases.source("DELETE FROM shipments WHERE shipment_id = ?", (shipment_id,))
    databases.source(
        "INSERT INTO shipments VALUES (?, ?, ?, ?)", (shipment_id, day.isoformat(), weight, at)
    )


def test_the_window_is_read_whole_then_by_its_changes(
    databases: Databases, airflow_home: Path
) -> None:
    # Both runs must fall on one UTC day, or the second one reads the moved window whole.
    on_one_utc_day()
    today = datetime.now(UTC).date()
    low = today - timedelta(days=29)
    databases.create(
        "CREATE TABLE shipments (shipment_id BIGINT PRIMARY KEY, ship_date DATE NOT NULL, "
        "weight_g BIGINT, updated_at TIMESTAMPTZ NOT NULL)"
    )
    ship(databases, 1, today, 500, now())
    ship(databases, 2, today - timedelta(days=10), 1200, now())
    ship(databases, 3, low, 300, now())
    ship(databases, 4, low - timedelta(days=1), 999, now())  # one day before the window
    example = load_example(airflow_home, "shipments")

    first = databases.run(example.dag)
    assert states(first) == dict.fromkeys(TASKS, "success")
    whole = Manifest.from_dict(xcom(first, "shipments.extract")["manifest"])
    assert whole.shape == "last_30_days" and whole.window == (low, today)
    assert published(databases) == in_window(databases, low)  # 1, 2 and 3; not 4
    inside = databases.claims("shipments", windows={"shipments": (low, today)})
    assert inside.exact_as_of == whole.produced_at
    assert databases.claims("shipments").state == "unknown"  # outside: nothing proven

    # A new shipment, a corrected weight, a late commit stamped before the last read, and a
    # shipment deleted from the source.
    ship(databases, 5, today - timedelta(days=3), 800, now())
    ship(databases, 2, today - timedelta(days=10), 1250, now())
    ship(databases, 6, today - timedelta(days=1), 50, whole.produced_at - timedelta(minutes=5))
    databases.source("DELETE FROM shipments WHERE shipment_id = ?", (3,))

    second = databases.run(example.dag)
    assert states(second) == dict.fromkeys(TASKS, "success")
    changes = Manifest.from_dict(xcom(second, "shipments.extract")["manifest"])
    assert changes.shape == "window_changes"
    # The 30-minute lookback reaches back before the last read: shipment 6 is caught.
    assert changes.since == whole.produced_at - timedelta(minutes=30)
    deleted = (3, low, 300)
    assert published(databases) == in_window(databases, low) | {deleted}
    # The claims say what a changes read cannot prove: deletions only as of the whole read.
    claims = databases.claims("shipments", windows={"shipments": (low, today)})
    assert claims.state == "patched" and claims.exact_as_of is None
    assert claims.complete_as_of == changes.produced_at
    assert claims.deletions_as_of == whole.produced_at
    # The Asset event states the same over the window, not the whole table's unknown dates.
    event = asset_events("dogana://dogana_default/shipments")[-1]
    assert event["window"] == [low.isoformat(), today.isoformat()]
    assert event["state"] == "patched"
    assert (event["complete_as_of"], event["deletions_as_of"], event["exact_as_of"]) == (
        changes.produced_at.isoformat(),
        whole.produced_at.isoformat(),
        None,
    )

    # The same delivery again: a replay, nothing changes.
    ledger = databases.hook.receiver.ledger("shipments")
    again = redeliver(databases, airflow_home, xcom(second, "shipments.extract"))
    assert Receipt.from_dict(xcom(again, "publish")).outcome is Outcome.REPLAYED
    assert databases.hook.receiver.ledger("shipments") == ledger

    # A file carrying a shipment from outside its window is refused; nothing is published.
    ship(databases, 1, today, 550, now())
    extracted = databases.run(example.dag, mark_success_pattern="^shipments\\.(gate|publish)$")
    delivery = xcom(extracted, "shipments.extract")
    path = local_path(delivery["uri"])
    table = pq.read_table(path)
    stray = table.slice(0, 1).set_column(
        table.schema.get_field_index("ship_date"),
        table.schema.field("ship_date"),
        pa.array([low - timedelta(days=5)], table.schema.field("ship_date").type),
    )
    pq.write_table(pa.concat_tables([table, stray]), path)
    before = published(databases)
    refused = redeliver(databases, airflow_home, delivery)
    assert states(refused) == {"gate": "failed", "publish": "upstream_failed"}
    assert databases.receipts("shipments")[-1].outcome is Outcome.REJECTED
    assert published(databases) == before
    assert databases.hook.receiver.ledger("shipments") == ledger
