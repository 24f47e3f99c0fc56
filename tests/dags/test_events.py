"""dags/examples/events.py: a keyless append-only table, appended run after run."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from example_runs import Databases, load_example, local_path, now, redeliver, states, xcom

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

# delivery_task_group: the four tasks in the TaskGroup named after the table
TASKS = ("events.plan", "events.extract", "events.gate", "events.publish")


def record(databases: Databases, *events: tuple[str, str]) -> None:
    databases.source("INSERT INTO events VALUES (?, ?, ?)", *[(k, p, now()) for k, p in events])


def source_events(databases: Databases) -> Counter[tuple[object, ...]]:
    """A multiset: two equal events are two rows."""
    return Counter(databases.source_rows("SELECT kind, payload FROM events"))


def published(databases: Databases) -> Counter[tuple[object, ...]]:
    with databases.hook.receiver.read("events") as snapshot:
        at = [snapshot.columns.index("kind"), snapshot.columns.index("payload")]
        return Counter(tuple(row[i] for i in at) for row in snapshot.rows)


def test_events_are_appended_once_each(databases: Databases, airflow_home: Path) -> None:
    databases.create(
        "CREATE TABLE events (kind TEXT NOT NULL, payload TEXT, recorded_at TIMESTAMPTZ NOT NULL)"
    )
    record(databases, ("click", "home"), ("click", "home"), ("view", "cart"))
    example = load_example(airflow_home, "events")

    first = databases.run(example.dag)
    assert states(first) == dict.fromkeys(TASKS, "success")
    appended = Manifest.from_dict(xcom(first, "events.extract")["manifest"])
    # The first append starts at the contract's start_at: the history the source keeps.
    assert appended.since == example.EVENTS.start_at and appended.rows == 3
    assert published(databases) == source_events(databases)
    assert databases.claims("events").exact_as_of == appended.produced_at

    record(databases, ("click", "home"), ("buy", "cart"))
    second = databases.run(example.dag)
    assert states(second) == dict.fromkeys(TASKS, "success")
    next_append = Manifest.from_dict(xcom(second, "events.extract")["manifest"])
    # Exactly where the last read ended: no overlap (an event read twice counts twice).
    assert next_append.since == appended.produced_at and next_append.rows == 2
    assert published(databases) == source_events(databases)
    assert sum(published(databases).values()) == 5
    claims = databases.claims("events", limit=timedelta(hours=1))
    assert claims.state == "complete" and claims.exact_as_of == next_append.produced_at

    # The same append gated and published again is a replay: the events are not appended twice.
    again = redeliver(databases, airflow_home, xcom(second, "events.extract"))
    assert states(again) == {"gate": "success", "publish": "success"}
    assert Receipt.from_dict(xcom(again, "publish")).outcome is Outcome.REPLAYED
    assert published(databases) == source_events(databases)

    # A file that gained a row on its way is refused, and nothing is appended.
    record(databases, ("view", "home"))
    extracted = databases.run(example.dag, mark_success_pattern="^events\\.(gate|publish)$")
    delivery = xcom(extracted, "events.extract")
    path = local_path(delivery["uri"])
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), path)  # one event twice
    ledger = databases.hook.receiver.ledger("events")
    refused = redeliver(databases, airflow_home, delivery)
    assert states(refused) == {"gate": "failed", "publish": "upstream_failed"}
    rejected = databases.receipts("events")[-1]
    assert rejected.outcome is Outcome.REJECTED
    assert {"rows", "content_hash"} <= {check.name for check in rejected.failed}
    assert databases.hook.receiver.ledger("events") == ledger
    assert sum(published(databases).values()) == 5
