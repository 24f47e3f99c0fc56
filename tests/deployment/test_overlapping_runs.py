"""Overlapping runs, and what a release or a discard means for later deliveries, under the real
scheduler (dags/overlapping.py), in a receiver of their own: a fresh PostgreSQL schema, reached
by the connection dogana_test_overlap that the story adds through the REST API.

    catch-up: dogana_test_catchup (the quickstart's shape, @daily) is unpaused, which creates its
        latest scheduled run, and triggered at once: the two runs race. The later read
        publishes; the other's delivery is refused as late, recorded, and its run ends green,
        its publish skipped naming the publication that met its requirement.
    concurrent: two manual runs of dogana_test_concurrent, the same race.
    released: dogana_test_released holds a row (an amount above 1,000,000); a person releases it
        and clears the gate. The next run reads the same row again, unchanged, and publishes
        without holding. A new row then holds again; a person discards it and clears the gate
        as its message invites: the same manifest is refused as discarded, naming the person.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import psycopg2
import pytest
from deployment import Client, Run
from stories import Played, Servers, drop_schema, story

from dogana_core import Outcome
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

RECEIVER = "dogana_test_overlap"
CATCHUP = "dogana_test_catchup"
CONCURRENT = "dogana_test_concurrent"
RELEASED = "dogana_test_released"
PERSON = "Ada Lovelace"
TURNS = Path(tempfile.gettempdir()) / "dogana-test-turns"  # dags/overlapping.py's TURNS


@dataclass
class Overlap:
    """What the story saw, for the tests to judge."""

    schema: str
    url: str
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, str | None]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    commands: list[subprocess.CompletedProcess[str]] = field(default_factory=list)

    def receiver(self) -> Receiver:
        return Receiver(
            lambda: psycopg2.connect(self.url, options=f"-csearch_path={self.schema}"), POSTGRES
        )

    def end(self, client: Client, name: str, run: Run, task_id: str) -> None:
        self.found[name] = client.wait(run)
        self.states[name] = client.states(run)
        assert client.deployment is not None
        self.logs[name] = client.deployment.task_log(run, task_id)


def dogana(client: Client, *args: str) -> subprocess.CompletedProcess[str]:
    """The `dogana` command a person runs at the deployment's terminal, exactly as a held gate's
    log prints it: the receiver's connection only in the metadata database, none in the
    environment."""
    assert client.deployment is not None
    return subprocess.run(
        [str(Path(sys.executable).parent / "dogana"), *args],
        env=client.deployment.terminal_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def as_printed(client: Client, log: str, verb: str) -> subprocess.CompletedProcess[str]:
    """The `dogana hold VERB ...` command a held gate's log tells a person to run, run as
    printed, the person's name and reason filled in where the log leaves them to be."""
    events = [json.loads(line).get("event", "") for line in log.splitlines() if line.strip()]
    pattern = re.compile(rf'dogana hold {verb} .*?--by "YOUR NAME"(?: --reason "WHY")?')
    found = next(filter(None, map(pattern.search, events)), None)
    assert found is not None, log
    printed = found.group(0).replace("YOUR NAME", PERSON).replace("WHY", "a wrong amount")
    words = shlex.split(printed)
    assert words[:3] == ["dogana", "hold", verb], printed
    return dogana(client, *words[1:])


def source_file(client: Client) -> Path:
    assert client.deployment is not None
    conn = client.deployment.environment["AIRFLOW_CONN_DOGANA_TEST_SOURCE"]
    return Path(json.loads(conn)["host"])


def source(client: Client, *statements: str) -> None:
    with sqlite3.connect(source_file(client)) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()


@story
def overlapping(client: Client, servers: Servers) -> Overlap:
    url = servers["postgres"]
    assert url is not None, "the real-scheduler layer's metadata database is PostgreSQL"
    overlap = Overlap(f"dogana_overlap_{uuid.uuid4().hex[:10]}", url)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {overlap.schema}")
    client.add_schema_connection(RECEIVER, url, overlap.schema)
    for dag_id in (CATCHUP, CONCURRENT):
        shutil.rmtree(TURNS / dag_id, ignore_errors=True)
    client.wait_parsed([CATCHUP, CONCURRENT, RELEASED])

    # The catch-up run beside a manual one.
    client.unpause(CATCHUP)
    scheduled = client.wait_for_run(CATCHUP, run_type="scheduled")
    manual = client.trigger(CATCHUP)
    overlap.end(client, "scheduled", scheduled, "publish")
    overlap.end(client, "manual", manual, "publish")

    # Two manual runs at once.
    client.unpause(CONCURRENT)
    first, second = client.trigger(CONCURRENT), client.trigger(CONCURRENT)
    overlap.end(client, "first", first, "publish")
    overlap.end(client, "second", second, "publish")

    # A release, the same row read again, a discard, and the discarded manifest retried.
    source(
        client,
        "CREATE TABLE released_rows (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)",
        "INSERT INTO released_rows VALUES (1, 500), (2, 2500000)",
    )
    client.unpause(RELEASED)
    held = client.trigger(RELEASED)
    overlap.end(client, "held", held, "gate")
    overlap.commands.append(as_printed(client, overlap.logs["held"], "release"))
    client.clear(held, "gate")
    overlap.end(client, "released", held, "gate")
    overlap.end(client, "again", client.trigger(RELEASED), "gate")
    source(client, "INSERT INTO released_rows VALUES (3, 3000000)")
    discarded = client.trigger(RELEASED)
    overlap.end(client, "held_new_row", discarded, "gate")
    overlap.commands.append(as_printed(client, overlap.logs["held_new_row"], "discard"))
    client.clear(discarded, "gate")
    overlap.end(client, "retried", discarded, "gate")
    return overlap


@pytest.fixture(scope="module")
def overlap(played: Played, postgres_url: str) -> Any:
    found = played.result(overlapping)
    yield found
    drop_schema(postgres_url, found.schema)


def superseded_race(client: Client, overlap: Overlap, names: tuple[str, str], table: str) -> None:
    for name in names:
        assert overlap.found[name]["state"] == "success", (name, overlap.states[name])
    published = [n for n in names if overlap.states[n]["publish"] == "success"]
    skipped = [n for n in names if overlap.states[n]["publish"] == "skipped"]
    assert len(published) == 1 and len(skipped) == 1, [overlap.states[n] for n in names]
    (loser,) = skipped
    assert "superseded by publication" in overlap.logs[loser]
    accepted, refused = overlap.receiver().receipts(table)
    assert accepted.outcome is Outcome.ACCEPTED
    assert refused.outcome is Outcome.REJECTED
    assert [check.name for check in refused.failed] == ["transition"]
    assert f"superseded by publication {accepted.publication_id[:12]}" in overlap.logs[loser]
    assert overlap.receiver().verify(table).publications == 1


def test_a_catch_up_run_beside_a_manual_run_ends_green_with_one_publication_and_one_superseded(
    client: Client, overlap: Overlap
) -> None:
    superseded_race(client, overlap, ("scheduled", "manual"), "overlap_catchup")


def test_two_concurrent_manual_runs_end_green_with_one_publication_and_one_superseded(
    client: Client, overlap: Overlap
) -> None:
    superseded_race(client, overlap, ("first", "second"), "overlap_concurrent")


def test_a_released_row_read_again_unchanged_does_not_hold_the_next_run(
    client: Client, overlap: Overlap
) -> None:
    assert overlap.states["held"]["gate"] == "failed"
    release = overlap.commands[0]
    assert release.returncode == 0, release.stderr
    assert overlap.found["released"]["state"] == "success"
    assert overlap.found["again"]["state"] == "success", overlap.states["again"]
    receipts = overlap.receiver().receipts("released_rows")
    assert [r.outcome for r in receipts[:2]] == [Outcome.ACCEPTED, Outcome.ACCEPTED]
    (check,) = [c for c in receipts[1].checks if c.name == "amount_plausible"]
    assert check.passed and "all released earlier" in check.detail


def test_a_discarded_delivery_retried_by_clearing_its_gate_is_refused_as_discarded(
    client: Client, overlap: Overlap
) -> None:
    assert overlap.states["held_new_row"]["gate"] == "failed"
    discard = overlap.commands[1]
    assert discard.returncode == 0, discard.stderr
    assert overlap.found["retried"]["state"] == "failed"
    assert overlap.states["retried"]["gate"] == "failed"
    assert f"discarded by {PERSON}" in overlap.logs["retried"]
    receiver = overlap.receiver()
    assert receiver.holds("released_rows") == []
    refused = receiver.receipts("released_rows")[-1]
    assert [check.name for check in refused.failed] == ["discarded"]
