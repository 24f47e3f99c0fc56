"""A deferrable ClaimsSensor and a DAG scheduled on a dogana Asset, under the real scheduler.

One story around the table parcels (dags/parcels.py), in the examples' receiver:

    1. dogana_test_wait_parcels is triggered: parcels does not exist yet, so its deferrable
       sensor defers to the triggerer (the task's state is "deferred", no worker slot held)
    2. dogana_test_parcels publishes parcels, its Asset the outlet
    3. the trigger sees the claims, and the sensor resumes on a worker and succeeds
    4. the scheduler creates a run of dogana_test_parcels_consumer, scheduled on that Asset,
       whose task reads the claims from triggering_asset_events
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from deployment import Client, Run
from stories import Played, Servers, story

ASSET = "dogana://dogana_default/parcels"


@dataclass
class Parcels:
    waiting: Run
    publishing: Run
    consuming: Run
    states_seen: list[str | None]
    found: dict[Run, dict[str, Any]]


def wait_for_state(
    client: Client, run: Run, task_id: str, state: str, timeout: float = 120
) -> list[str | None]:
    """Wait until the task's state is state; every state seen on the way, in order."""
    seen: list[str | None] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = client.states(run).get(task_id)
        if not seen or seen[-1] != now:
            seen.append(now)
        if now == state:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"{run} {task_id}: states {seen}, never {state} in {timeout} s")


@story
def parcels(client: Client, servers: Servers) -> Parcels:
    dags = ["dogana_test_wait_parcels", "dogana_test_parcels", "dogana_test_parcels_consumer"]
    client.wait_parsed(dags)
    for dag_id in dags:
        client.unpause(dag_id)
    waiting = client.trigger("dogana_test_wait_parcels")
    seen = wait_for_state(client, waiting, "wait", "deferred")
    publishing = client.trigger("dogana_test_parcels")
    found = client.wait_all([publishing, waiting])
    consuming = client.wait_for_run("dogana_test_parcels_consumer", run_type="asset_triggered")
    found.update(client.wait_all([consuming]))
    return Parcels(waiting, publishing, consuming, seen, found)


@pytest.fixture(scope="module")
def parcel_runs(played: Played) -> Parcels:
    return played.result(parcels)


def test_a_deferrable_claims_sensor_waits_in_the_triggerer_and_resumes_after_a_publish(
    client: Client, parcel_runs: Parcels
) -> None:
    assert parcel_runs.states_seen[-1] == "deferred"
    assert parcel_runs.found[parcel_runs.publishing]["state"] == "success", client.explain(
        parcel_runs.publishing
    )
    found = parcel_runs.found[parcel_runs.waiting]
    assert found["state"] == "success", client.explain(parcel_runs.waiting)
    claims = client.xcom(parcel_runs.waiting, "wait")
    assert claims["tables"] == ["parcels"]
    assert datetime.fromisoformat(claims["complete_as_of"]) >= datetime.fromisoformat(
        found["run_after"]
    )


def test_a_dag_scheduled_on_a_dogana_asset_reads_that_tables_claims_from_its_events(
    client: Client, parcel_runs: Parcels
) -> None:
    found = parcel_runs.found[parcel_runs.consuming]
    assert found["state"] == "success", client.explain(parcel_runs.consuming)
    assert found["logical_date"] is None
    [published] = client.asset_events(
        ASSET, source_dag_id="dogana_test_parcels", source_run_id=parcel_runs.publishing.run_id
    )
    assert published["extra"]["tables"] == ["parcels"]
    assert client.xcom(parcel_runs.consuming, "claims") == [published["extra"]]
    # The run's end, its run_after, is when the event was queued: after the claims it carries.
    assert datetime.fromisoformat(found["run_after"]) >= datetime.fromisoformat(
        published["extra"]["complete_as_of"]
    )
