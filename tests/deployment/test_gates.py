"""The receiver's two gates under the real scheduler, as a person meets them (dags/gated.py):

    holds: dogana_test_deposits is triggered; its gate holds the delivery (an amount above
        1,000,000) and fails, its log saying how to end the hold; a person runs
        `dogana hold release` at a terminal and clears the gate task in Airflow; the gate run
        again hands the released receipt on, the publish task succeeds and the Asset event
        arrives. Then a negative amount in the source: the next run's gate blocks it (the
        released row, unchanged, holds nothing again), and nothing more is published.

    activation: dogana_test_accounts is triggered while accounts is pending; its plan fails,
        printing the `dogana activate` command. dags/examples/activate_source.py is triggered
        through the REST API by a service account (refused: it names no person) and then by a
        person's login without naming themselves (recorded as that login); the pipeline then
        publishes.

What `dag.test()` never gives these tasks is here: a run's type and its triggering user set by
the API server, a task cleared and run again in a new process reading its upstream's XCom, and
the command line acting on the receiver while Airflow's run waits.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from deployment import Client, Run
from stories import Played, Servers, story

from dogana_core import Outcome
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

RECEIVER = "dogana_default"
DEPOSITS = "dogana_test_deposits"
ACCOUNTS = "dogana_test_accounts"
ACTIVATE = "dogana_activate_source"
PERSON = "grace.hopper"
"""A person's login: the activation is recorded as it when the form names no one."""
SERVICE = "svc_reports"
"""An automation's login, as a script calling the REST API has: it may trigger, not activate."""
RELEASER = "Ada Lovelace"
TASKS = ("plan", "extract", "gate", "publish")


@dataclass
class Gated:
    """What the stories saw, for the tests to judge."""

    runs: dict[str, Run] = field(default_factory=dict)
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, str | None]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    command: subprocess.CompletedProcess[str] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def end(self, client: Client, name: str, run: Run, task_id: str) -> None:
        """Wait for run, and keep its state, its tasks' and the log of task_id."""
        self.runs[name] = run
        self.found[name] = client.wait(run)
        self.states[name] = client.states(run)
        assert client.deployment is not None
        self.logs[name] = client.deployment.task_log(run, task_id)


def source_file(client: Client) -> Path:
    """The test DAGs' SQLite source, as the deployment's connection names it."""
    assert client.deployment is not None
    conn = client.deployment.environment["AIRFLOW_CONN_DOGANA_TEST_SOURCE"]
    return Path(json.loads(conn)["host"])


def dogana(client: Client, *args: str) -> subprocess.CompletedProcess[str]:
    """The `dogana` command, run as a person at a terminal of the deployment runs it: with its
    environment (the receiver's connection among it)."""
    assert client.deployment is not None
    return subprocess.run(
        [str(Path(sys.executable).parent / "dogana"), *args],
        env=client.deployment.environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


@story
def holds(client: Client, servers: Servers) -> Gated:
    gated = Gated()
    client.wait_parsed([DEPOSITS])
    client.unpause(DEPOSITS)
    held = client.trigger(DEPOSITS)
    gated.end(client, "held", held, "gate")
    gated.command = dogana(client, "hold", "release", RECEIVER, "deposits-1", "--by", RELEASER)
    client.clear(held, "gate")
    gated.end(client, "released", held, "gate")
    gated.events = client.asset_events(f"dogana://{RECEIVER}/deposits", source_run_id=held.run_id)

    with sqlite3.connect(source_file(client)) as source:
        source.execute("UPDATE deposits SET amount = -5 WHERE id = 1")
    source.close()
    gated.end(client, "blocked", client.trigger(DEPOSITS), "gate")
    return gated


@story
def activation(client: Client, servers: Servers) -> Gated:
    gated = Gated()
    client.wait_parsed([ACCOUNTS, ACTIVATE])
    for dag_id in (ACCOUNTS, ACTIVATE):
        client.unpause(dag_id)
    gated.end(client, "pending", client.trigger(ACCOUNTS), "plan")
    form = {
        "table": "accounts",
        "owner": "Grace Owner",
        "authorized_by": "Katherine Grantor",
        "expires": "30d",
        "licence": "internal-use-only",
        "purposes": ["testing the gates"],
        "provenance": "the test's own source database",
    }
    assert client.deployment is not None  # conftest.py's USERS log in as themselves
    as_service = client.deployment.client(SERVICE)
    gated.end(client, "by_service", as_service.trigger(ACTIVATE, conf=form), "activate")
    as_person = client.deployment.client(PERSON)
    gated.end(client, "by_person", as_person.trigger(ACTIVATE, conf=form), "activate")
    gated.end(client, "active", client.trigger(ACCOUNTS), "publish")
    gated.events = client.asset_events(
        f"dogana://{RECEIVER}/accounts", source_run_id=gated.runs["active"].run_id
    )
    return gated


@pytest.fixture(scope="module")
def receiver(postgres_url: str, examples_receiver: str) -> Receiver:
    """The examples' receiver, as the tests read it behind the deployment's back."""
    return Receiver(
        lambda: psycopg2.connect(postgres_url, options=f"-csearch_path={examples_receiver}"),
        POSTGRES,
    )


@pytest.fixture(scope="module")
def held(played: Played) -> Gated:
    return played.result(holds)


@pytest.fixture(scope="module")
def activated(played: Played) -> Gated:
    return played.result(activation)


def published(receiver: Receiver, table: str) -> set[tuple[Any, ...]]:
    connection = receiver.connect()
    try:
        cursor = connection.cursor()
        cursor.execute(f"SELECT * FROM {table} ORDER BY 1")
        return set(cursor.fetchall())
    finally:
        connection.close()


def test_a_held_delivery_fails_its_gate_and_publishes_once_a_person_releases_it_and_clears_the_gate(
    client: Client, held: Gated, receiver: Receiver
) -> None:
    # The first end of the run: the gate failed showing the hold, the publish never ran.
    assert held.found["held"]["state"] == "failed"
    assert held.states["held"] == {
        "plan": "success",
        "extract": "success",
        "gate": "failed",
        "publish": "upstream_failed",
    }
    first = held.logs["held"]
    assert "deposits: amount_plausible: violated (hold)" in first
    assert f"dogana hold release {RECEIVER} deposits-1 --by" in first
    assert held.command is not None and held.command.returncode == 0, held.command
    assert "deposits-1" in held.command.stdout

    # Cleared, the gate ran again on the extract's XCom and found its released receipt.
    assert held.found["released"]["state"] == "success", client.explain(held.runs["held"])
    assert held.states["released"] == dict.fromkeys(TASKS, "success")
    receipt = receiver.receipts("deposits")[0]
    assert receipt.outcome is Outcome.ACCEPTED
    assert any(f"released by {RELEASER}" in check.detail for check in receipt.checks)
    assert receiver.holds("deposits") == []
    [event] = held.events
    assert event["extra"]["tables"] == ["deposits"]
    assert event["extra"]["publication_id"] == receipt.publication_id


def test_a_blocked_delivery_fails_its_gate_and_publishes_nothing_under_the_scheduler(
    client: Client, held: Gated, receiver: Receiver
) -> None:
    found = held.found["blocked"]
    assert found["state"] == "failed"
    assert held.states["blocked"] == {
        "plan": "success",
        "extract": "success",
        "gate": "failed",
        "publish": "upstream_failed",
    }
    assert "violated (block): min -5 (geq_to 0), 1 row" in held.logs["blocked"]
    accepted, rejected = receiver.receipts("deposits")
    assert accepted.outcome is Outcome.ACCEPTED
    assert rejected.outcome is Outcome.REJECTED
    # The block decides: nothing is held for a person. Row 2, which a person released above and
    # which is unchanged, does not violate the hold again.
    assert [check.name for check in rejected.failed] == ["amount.min"]
    (plausible,) = [check for check in rejected.checks if check.name == "amount_plausible"]
    assert plausible.passed and "all released earlier" in plausible.detail
    assert published(receiver, "deposits") == {(1, 500), (2, 2_500_000)}
    assert receiver.holds("deposits") == []


def test_a_pending_table_fails_its_plan_under_the_scheduler_with_the_activate_command(
    client: Client, activated: Gated
) -> None:
    assert activated.found["pending"]["state"] == "failed"
    assert activated.states["pending"]["plan"] == "failed"
    assert "table accounts is pending" in activated.logs["pending"]
    assert f"dogana activate {RECEIVER} accounts" in activated.logs["pending"]


def test_a_service_account_triggering_the_activation_dag_is_refused(
    client: Client, activated: Gated, receiver: Receiver
) -> None:
    found = activated.found["by_service"]
    assert found["state"] == "failed"
    assert found["triggering_user_name"] == SERVICE
    assert (
        f"the user who triggered the run: a named person records an activation ({SERVICE!r} is "
        "an account" in activated.logs["by_service"]
    )
    refused = activated.runs["by_service"].run_id
    log = receiver.sources.log("accounts")
    assert all(entry.detail.get("origin", {}).get("run_id") != refused for entry in log)


def test_a_person_triggering_the_activation_dag_is_recorded_as_its_login_and_the_table_publishes(
    client: Client, activated: Gated, receiver: Receiver
) -> None:
    found = activated.found["by_person"]
    assert found["state"] == "success", client.explain(activated.runs["by_person"])
    assert found["triggering_user_name"] == PERSON
    entry = receiver.sources.log("accounts")[-1]
    assert (entry.event, entry.actor) == ("activated", PERSON)
    assert entry.detail["origin"] == {
        "dag_id": ACTIVATE,
        "run_id": activated.runs["by_person"].run_id,
        "triggered_by": PERSON,
    }
    active = activated.runs["active"]
    assert activated.found["active"]["state"] == "success", client.explain(active)
    [event] = activated.events
    assert event["extra"]["tables"] == ["accounts"]
    assert published(receiver, "accounts") == {(1, "accounts one"), (2, "accounts two")}
